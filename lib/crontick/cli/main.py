"""The `crontick` command: migrate, serve, dev, tick, enqueue, jobs, retry, cancel, stats, token, schedules."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from crontick import db
from crontick.cli.migrate import asked_source, cmd_migrate, source_option
from crontick.cli.ports import free_port, port_number
from crontick.errors import ConfigError, CrontickError, DatabaseUnavailable, DatabaseUrlError
from crontick.jobs import registry
from crontick.settings import Settings

DEV_HOST = "127.0.0.1"
DEV_SECRET_FILE = Path(".crontick") / "dev-secret"
DEV_ADMIN_SECRET_FILE = Path(".crontick") / "dev-admin-secret"


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run one command; `env` (default os.environ) is where its settings come from (crontick.django passes
    the environment plus a DATABASE_URL derived from Django's DATABASES)."""
    args = _parser().parse_args(argv)
    args.env = env
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # here, not at exit, so a reader gone (`crontick jobs | head`) is caught below
        return code
    except (CrontickError, psycopg.Error) as exc:
        print(f"crontick: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of stdout left: stop quietly, as a command killed by SIGPIPE would, and point
        # stdout at /dev/null so the interpreter's own flush at exit does not print a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _parser() -> argparse.ArgumentParser:
    import crontick

    p = argparse.ArgumentParser(prog="crontick", description=__doc__)
    p.add_argument("--version", action="version", version=f"crontick {crontick.__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    _add_run_parsers(sub)
    _add_enqueue_parser(sub)

    # Admin parity (crontick.cli.admin): jobs, retry, cancel, stats; a table, or --json.
    from crontick.cli.admin import add_parsers

    add_parsers(sub)
    from crontick.cli import flow  # pause, resume, groups, rate-limits

    flow.add_parsers(sub)

    _add_helper_parsers(sub)

    from crontick.cli import init

    init.add_parser(sub, cmd_init)

    from crontick.cli import schedules  # the schedules subcommand (issue 8)

    schedules.add_parser(sub, cmd_schedules)
    return p


def _add_run_parsers(sub: Any) -> None:
    """migrate, serve, dev and tick."""
    m = sub.add_parser("migrate", help="create or update crontick's tables and functions in DATABASE_URL")
    m.add_argument("--sql", action="store_true", help="print the SQL instead of running it (no database needed)")
    m.add_argument("--after", metavar="VERSION", help="with --sql: only what comes after this migration, e.g. 0010")
    m.add_argument(
        "--reminder-source",
        metavar="SCHEMA.NAME",
        type=source_option,
        help="the table or view reminders are read from, instead of CRONTICK_REMINDER_SOURCE; the one way to "
        "point reminders back at crontick's own table (e.g. crontick.bookings) once another was set",
    )
    m.set_defaults(func=cmd_migrate)

    s = sub.add_parser("serve", help="serve the app with uvicorn (Cloud Run, Fly, Render, a VM)")
    s.add_argument("--host", default=os.environ.get("HOST", "0.0.0.0"))  # noqa: S104 (containers must listen on every interface)
    s.add_argument("--port", type=port_number, help="default: PORT, else 8000")
    s.set_defaults(func=cmd_serve)

    d = sub.add_parser("dev", help="embedded PostgreSQL + migrate + demo data + serve on 127.0.0.1:8000 (or PORT)")
    d.add_argument("--port", type=port_number, help="default: PORT, else 8000 (PORT=8123 make run)")
    d.add_argument(
        "--stop", action="store_true", help="stop the embedded PostgreSQL an earlier run left running, and exit"
    )
    d.set_defaults(func=cmd_dev)

    t = sub.add_parser("tick", help="run one tick in this process and print its JSON summary")
    t.add_argument("--drain", action="store_true", help="keep ticking until nothing due is left")
    t.set_defaults(func=cmd_tick)


def _add_enqueue_parser(sub: Any) -> None:
    e = sub.add_parser("enqueue", help="add a job")
    e.add_argument("type")
    e.add_argument("--payload", default="{}", help="JSON payload (default {})")
    e.add_argument("--run-after", type=_iso8601, help="ISO-8601 time with offset, e.g. 2026-12-01T09:00:00+01:00")
    e.add_argument("--max-attempts", type=int)
    e.add_argument("--key", help="de-duplication key: no second job while one with this key is pending or running")
    e.add_argument("--group-key", help="the job's group: jobs sharing one run one at a time, in enqueue order")
    e.add_argument("--priority", type=int, help="smaller is claimed first (default: the handler's priority, else 0)")
    e.set_defaults(func=cmd_enqueue)


def _add_helper_parsers(sub: Any) -> None:
    """hook-sign and token: lines to paste when trying crontick by hand."""
    h = sub.add_parser("hook-sign", help="print a curl line posting a Twilio-signed webhook (for trying inbound hooks)")
    h.add_argument("url", help="the hook's URL as Twilio calls it, e.g. http://127.0.0.1:8000/api/hooks/whatsapp")
    h.add_argument("-d", "--data", action="append", default=[], metavar="NAME=VALUE", help="a form field (repeatable)")
    h.set_defaults(func=cmd_hook_sign)

    k = sub.add_parser("token", help="print a short-lived token for one tick, signed with CRON_SECRET (HS256)")
    k.add_argument("--audience", help="the app's base URL, e.g. https://app.example.com (default: CRONTICK_PUBLIC_URL)")
    k.add_argument("--ttl", type=int, default=60, help="lifetime in seconds, at most 300 (default 60)")
    k.set_defaults(func=cmd_token)


def _iso8601(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO-8601 time such as 2026-12-01T09:00:00Z, got: {text!r}"
        ) from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"expected a time with a UTC offset (Z or +01:00), got: {text!r}")
    return value


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(args.env)


def _sync_connect(url: str) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(url, prepare_threshold=None, connect_timeout=db.CONNECT_TIMEOUT_SECONDS)
    except psycopg.ProgrammingError as exc:
        raise DatabaseUrlError(url, exc) from None  # not chained: psycopg's text may quote the password
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc


def cmd_tick(args: argparse.Namespace) -> int:
    from crontick import logs
    from crontick.runtime import Runtime

    logs.setup()  # the tick's lines (a job failed, a wake-up booked) as JSON on stderr, as an app writes them

    # Each step ends at the cut-off (budget plus a margin), even when a pooler in front of a
    # database that is down would hold it for minutes: then exit 1 with one line, no traceback.
    async def go() -> dict[str, Any]:
        runtime = Runtime(_settings(args), strict=True)
        try:
            result = await runtime.run(source="cli", drain=args.drain)
        finally:
            await runtime.close()
        return result.to_json()

    print(json.dumps(asyncio.run(go())))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from crontick.cli import init

    return init.run(args)


def cmd_enqueue(args: argparse.Namespace) -> int:
    from crontick.jobs.queue import enqueue

    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        raise CrontickError(
            f"--payload: expected JSON such as '{{\"user_id\": 42}}', got: {args.payload!r} ({exc.msg})"
        ) from None
    url = _settings(args).require_database_url()
    with _sync_connect(url) as conn, conn.transaction():
        job_id = enqueue(
            conn,
            args.type,
            payload,
            run_after=args.run_after,
            max_attempts=args.max_attempts,
            key=args.key,
            group_key=args.group_key,
            priority=args.priority,
        )
    print(job_id)
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    from crontick.auth.tick import MAX_TOKEN_TTL_SECONDS, mint_token

    settings = _settings(args)
    if not settings.cron_secret:
        raise ConfigError("CRON_SECRET: expected the secret the app verifies tokens with, got: nothing")
    audience = args.audience or settings.public_url
    if not audience:
        raise ConfigError(
            "--audience: expected the app's base URL such as https://app.example.com (or set CRONTICK_PUBLIC_URL), got: nothing"
        )
    if not 1 <= args.ttl <= MAX_TOKEN_TTL_SECONDS:
        raise CrontickError(f"--ttl: expected 1 to {MAX_TOKEN_TTL_SECONDS} seconds, got: {args.ttl}")
    print(mint_token(settings.cron_secret, audience.rstrip("/"), ttl_seconds=args.ttl))
    return 0


def cmd_schedules(args: argparse.Namespace) -> int:
    from datetime import UTC

    from crontick.cli import schedules
    from crontick.schedules import listing

    settings = _settings(args)
    registry.load_modules(settings.handler_modules)
    if args.action is not None:  # enqueue | pause | resume NAME (issue 23)
        return schedules.run_action(args, settings.require_database_url())
    if args.start is not None or args.until is not None:
        schedules.print_window(args)  # pure: no database
    elif settings.database_url:
        with _sync_connect(settings.database_url) as conn:
            schedules.print_listing(listing.listing(conn, datetime.now(UTC)), args.json)
    else:  # no database: the definitions and their next slot only
        schedules.print_listing(listing.listing(None, datetime.now(UTC)), args.json)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    uvicorn = _uvicorn()
    args.port = free_port(args, args.host)
    settings = _settings(args)  # fail here, with one line, rather than on the first request
    settings.require_database_url()
    registry.load_modules(settings.handler_modules)
    from crontick.app import create_app

    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="info")
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    uvicorn = _uvicorn()
    from crontick.db import embedded

    if args.stop:
        stopped = embedded.stop(embedded.DEFAULT_DATA_DIR)
        print(f"crontick dev: embedded PostgreSQL {'stopped' if stopped else 'was not running'}")
        return 0
    # Ctrl-C stops dev during its start-up too, also when started with SIGINT ignored (`crontick dev &` in a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args.port = free_port(args, DEV_HOST)  # before the database is started or seeded
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = embedded.start(stop_at_exit=True)  # Ctrl-C stops it too
        print(f"crontick dev: embedded PostgreSQL running, data in {embedded.DEFAULT_DATA_DIR}/")
    secret_from_env = bool(os.environ.get("CRON_SECRET"))
    if not secret_from_env:
        os.environ["CRON_SECRET"] = _dev_secret(DEV_SECRET_FILE)
    admin_from_env = bool(os.environ.get("CRONTICK_ADMIN_SECRET"))
    if not admin_from_env:
        os.environ["CRONTICK_ADMIN_SECRET"] = _dev_secret(DEV_ADMIN_SECRET_FILE, prefix="admin-")
    mods = [m for m in os.environ.get("CRONTICK_HANDLERS", "").split(",") if m.strip()]
    os.environ["CRONTICK_HANDLERS"] = ",".join(dict.fromkeys(["crontick.demo", *mods]))
    settings = _settings(args)
    url = settings.require_database_url()
    applied = asyncio.run(db.migrate(url, settings.schema, asked_source(settings)))
    print(f"crontick dev: migrations {'applied: ' + ', '.join(applied) if applied else 'up to date'}")
    from crontick import demo

    demo.seed(url)
    registry.load_modules(settings.handler_modules)
    demo.declare_schedules()  # `crontick schedules` in another shell lists it only with CRONTICK_HANDLERS set
    from crontick.app import create_app

    base = f"http://{DEV_HOST}:{args.port}"
    print("crontick dev: demo jobs and bookings are seeded. Trigger a tick with:\n")
    print(dev_curl_line(settings.cron_secret or "", base, from_env=secret_from_env), flush=True)
    print(f"crontick dev: the admin dashboard is at {base}/admin")
    admin_secret = os.environ["CRONTICK_ADMIN_SECRET"]
    shown = f"from CRONTICK_ADMIN_SECRET ({masked(admin_secret)})" if admin_from_env else admin_secret
    print(f"crontick dev: sign in with the admin secret {shown}\n", flush=True)
    # Inbound webhooks: a Twilio WhatsApp hook signed with TWILIO_AUTH_TOKEN, or the dev secret.
    twilio_token = settings.twilio_auth_token or settings.cron_secret or ""
    demo.declare_hooks(twilio_token)
    form = {
        "MessageSid": "SM" + secrets.token_hex(16),
        "From": "whatsapp:+31612345678",
        "To": demo.DEMO_WHATSAPP_FROM,
        "Body": "Hello from WhatsApp",
    }
    print(
        "Send a signed WhatsApp message (as Twilio would); its auto-reply prints here about 2 s later (each sender's "
        "burst of messages gets one reply):\n"
    )
    print(f"  {hook_curl(base + '/api/hooks/whatsapp', form, twilio_token)}\n", flush=True)
    uvicorn.run(create_app(settings), host=DEV_HOST, port=args.port, log_level="info")
    return 0


def masked(secret: str) -> str:
    """Enough of a secret to recognise which one it is, never enough to use it."""
    return f"{secret[:4]}…{secret[-2:]} ({len(secret)} characters)"


def dev_curl_line(secret: str, base: str, *, from_env: bool) -> str:
    """The curl line `crontick dev` prints. A CRON_SECRET from the environment may be a production one
    (terminal scrollback, CI logs), so it is referenced as $CRON_SECRET and shown only masked."""
    if from_env:
        return (
            f'  curl -sS -X POST -H "Authorization: Bearer $CRON_SECRET" {base}/api/cron/tick\n\n'
            f"  (CRON_SECRET comes from your environment: {masked(secret)})\n"
        )
    return f'  curl -sS -X POST -H "Authorization: Bearer {secret}" {base}/api/cron/tick\n'


def hook_curl(url: str, form: dict[str, str], token: str) -> str:
    """A curl line that POSTs `form` to `url` signed as Twilio signs it (X-Twilio-Signature)."""
    import base64
    import hashlib
    import hmac
    import shlex

    signed = url + "".join(name + form[name] for name in sorted(form))
    signature = base64.b64encode(hmac.new(token.encode(), signed.encode(), hashlib.sha1).digest()).decode()
    fields = " ".join(f"--data-urlencode {shlex.quote(f'{k}={v}')}" for k, v in form.items())
    return f"curl -sS -H {shlex.quote('X-Twilio-Signature: ' + signature)} {fields} {url}"


def cmd_hook_sign(args: argparse.Namespace) -> int:
    """Print a curl line for a Twilio webhook signed with TWILIO_AUTH_TOKEN (or, as in `crontick dev`, the dev secret)."""
    env = os.environ if args.env is None else args.env
    token = (
        env.get("TWILIO_AUTH_TOKEN")
        or env.get("CRON_SECRET")
        or (DEV_SECRET_FILE.read_text().strip() if DEV_SECRET_FILE.exists() else "")
    )
    if not token:
        raise ConfigError(
            "TWILIO_AUTH_TOKEN: expected the auth token to sign with (or run `crontick dev` once), got: nothing"
        )
    form = {}
    for field in args.data:
        name, sep, value = field.partition("=")
        if not sep or not name:
            raise CrontickError(f"-d: expected NAME=VALUE such as Body=hello, got: {field!r}")
        form[name] = value
    form.setdefault("MessageSid", "SM" + secrets.token_hex(16))
    print(hook_curl(args.url, form, token))
    return 0


def _dev_secret(path: Path, prefix: str = "") -> str:
    """A random secret for local development, kept under .crontick/ so it stays valid across restarts. The file
    is created with mode 0600 before the secret is written, so it is never readable by others."""
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = f"dev-{prefix}" + secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return value


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("serving needs uvicorn: pip install 'crontick[serve]'") from None
    return uvicorn


if __name__ == "__main__":
    sys.exit(main())
