"""The `crontick` command: migrate, serve, dev, tick, enqueue, jobs, retry, token, schedules."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from . import db, handlers
from .errors import ConfigError, CrontickError, DatabaseUnavailable, DatabaseUrlError
from .settings import Settings

DEV_HOST = "127.0.0.1"
DEV_PORT = 8000
DEV_SECRET_FILE = Path(".crontick") / "dev-secret"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (CrontickError, psycopg.Error) as exc:
        print(f"crontick: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="crontick", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("migrate", help="create or update the tables in DATABASE_URL").set_defaults(func=cmd_migrate)

    s = sub.add_parser("serve", help="serve the app with uvicorn (Cloud Run, Fly, Render, a VM)")
    s.add_argument("--host", default=os.environ.get("HOST", "0.0.0.0"))  # noqa: S104 (containers must listen on every interface)
    s.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    s.set_defaults(func=cmd_serve)

    d = sub.add_parser("dev", help="embedded PostgreSQL + migrate + demo data + serve on 127.0.0.1:8000")
    d.add_argument("--port", type=int, default=DEV_PORT)
    d.set_defaults(func=cmd_dev)

    t = sub.add_parser("tick", help="run one tick in this process and print its JSON summary")
    t.add_argument("--drain", action="store_true", help="keep ticking until nothing due is left")
    t.set_defaults(func=cmd_tick)

    e = sub.add_parser("enqueue", help="add a job")
    e.add_argument("type")
    e.add_argument("--payload", default="{}", help="JSON payload (default {})")
    e.add_argument("--run-after", type=_iso8601, help="ISO-8601 time with offset, e.g. 2026-12-01T09:00:00+01:00")
    e.add_argument("--max-attempts", type=int)
    e.add_argument("--key", help="de-duplication key: no second job while one with this key is pending or running")
    e.set_defaults(func=cmd_enqueue)

    j = sub.add_parser("jobs", help="list recent jobs")
    j.add_argument("--status", choices=("pending", "running", "done", "failed"))
    j.add_argument("--limit", type=int, default=50)
    j.set_defaults(func=cmd_jobs)

    r = sub.add_parser("retry", help="run a failed job again with fresh attempts")
    r.add_argument("job_id", type=int)
    r.set_defaults(func=cmd_retry)

    h = sub.add_parser("hook-sign", help="print a curl line posting a Twilio-signed webhook (for trying inbound hooks)")
    h.add_argument("url", help="the hook's URL as Twilio calls it, e.g. http://127.0.0.1:8000/api/hooks/whatsapp")
    h.add_argument("-d", "--data", action="append", default=[], metavar="NAME=VALUE", help="a form field (repeatable)")
    h.set_defaults(func=cmd_hook_sign)

    k = sub.add_parser("token", help="print a short-lived token for one tick, signed with CRON_SECRET (HS256)")
    k.add_argument("--audience", help="the app's base URL, e.g. https://app.example.com (default: CRONTICK_PUBLIC_URL)")
    k.add_argument("--ttl", type=int, default=60, help="lifetime in seconds, at most 300 (default 60)")
    k.set_defaults(func=cmd_token)

    from . import schedules_cli  # the schedules subcommand (issue 8)

    schedules_cli.add_parser(sub, cmd_schedules)
    return p


def _iso8601(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO-8601 time such as 2026-12-01T09:00:00Z, got: {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"expected a time with a UTC offset (Z or +01:00), got: {text!r}")
    return value


def _settings() -> Settings:
    return Settings.from_env()


def _sync_connect(url: str) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(url, prepare_threshold=None, connect_timeout=db.CONNECT_TIMEOUT_SECONDS)
    except psycopg.ProgrammingError as exc:
        raise DatabaseUrlError(url, exc) from None  # not chained: psycopg's text may quote the password
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc


def cmd_migrate(args: argparse.Namespace) -> int:
    applied = asyncio.run(db.migrate(_settings().require_database_url()))
    print(f"applied: {', '.join(applied)}" if applied else "up to date")
    return 0


def cmd_tick(args: argparse.Namespace) -> int:
    from .tick import drain, run_tick

    settings = _settings()
    handlers.load_modules(settings.handler_modules)
    url = settings.require_database_url()

    async def go() -> dict[str, Any]:
        conn = await db.connect(url)
        try:
            result = await (drain(conn, settings) if args.drain else run_tick(conn, settings, source="cli"))
        finally:
            await conn.close()
        return result.to_json()

    print(json.dumps(asyncio.run(go())))
    return 0


def cmd_enqueue(args: argparse.Namespace) -> int:
    from .queue import enqueue

    try:
        payload = json.loads(args.payload)
    except json.JSONDecodeError as exc:
        raise CrontickError(f"--payload: expected JSON such as '{{\"user_id\": 42}}', got: {args.payload!r} ({exc.msg})") from None
    url = _settings().require_database_url()
    with _sync_connect(url) as conn, conn.transaction():
        job_id = enqueue(conn, args.type, payload, run_after=args.run_after, max_attempts=args.max_attempts, key=args.key)
    print(job_id)
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    url = _settings().require_database_url()
    with _sync_connect(url) as conn:
        rows = conn.execute(db.query("job_list"), {"status": args.status, "limit": args.limit}).fetchall()
    print(f"{'id':>8}  {'type':<24} {'status':<8} {'tries':>5}  {'run_after':<25} last_error")
    for id_, type_, status, attempts, max_attempts, run_after, _updated, last_error in rows:
        err = (last_error or "").replace("\n", " ")[:80]
        print(f"{id_:>8}  {type_:<24} {status:<8} {attempts:>2}/{max_attempts:<2}  {run_after.isoformat(timespec='seconds'):<25} {err}")
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    url = _settings().require_database_url()
    with _sync_connect(url) as conn:
        row = conn.execute(db.query("job_retry"), {"id": args.job_id}).fetchone()
        if row is None:
            current = conn.execute(db.query("job_get_status"), {"id": args.job_id}).fetchone()
            conn.commit()
            if current is None:
                raise CrontickError(f"retry: expected an existing job id, got: {args.job_id} (no such job)")
            raise CrontickError(f"retry: expected a failed or done job, got job {args.job_id} with status {current[0]!r}")
        conn.commit()
    print(f"job {args.job_id} is pending again")
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    from .auth import MAX_TOKEN_TTL_SECONDS, mint_token

    settings = _settings()
    if not settings.cron_secret:
        raise ConfigError("CRON_SECRET: expected the secret the app verifies tokens with, got: nothing")
    audience = args.audience or settings.public_url
    if not audience:
        raise ConfigError("--audience: expected the app's base URL such as https://app.example.com (or set CRONTICK_PUBLIC_URL), got: nothing")
    if not 1 <= args.ttl <= MAX_TOKEN_TTL_SECONDS:
        raise CrontickError(f"--ttl: expected 1 to {MAX_TOKEN_TTL_SECONDS} seconds, got: {args.ttl}")
    print(mint_token(settings.cron_secret, audience.rstrip("/"), ttl_seconds=args.ttl))
    return 0


def cmd_schedules(args: argparse.Namespace) -> int:
    from datetime import UTC

    from . import schedules_cli

    settings = _settings()
    handlers.load_modules(settings.handler_modules)
    if args.start is not None or args.until is not None:
        schedules_cli.print_window(args)  # pure: no database
    elif settings.database_url:
        with _sync_connect(settings.database_url) as conn:
            schedules_cli.print_listing(schedules_cli.listing(conn, datetime.now(UTC)), args.json)
    else:  # no database: the definitions and their next slot only
        schedules_cli.print_listing(schedules_cli.listing(None, datetime.now(UTC)), args.json)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    uvicorn = _uvicorn()
    settings = _settings()  # fail here, with one line, rather than on the first request
    settings.require_database_url()
    handlers.load_modules(settings.handler_modules)
    from .app import create_app

    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="info")
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    uvicorn = _uvicorn()
    if not os.environ.get("DATABASE_URL"):
        from . import embedded

        os.environ["DATABASE_URL"] = embedded.start()
        print(f"crontick dev: embedded PostgreSQL running, data in {embedded.DEFAULT_DATA_DIR}/")
    secret_from_env = bool(os.environ.get("CRON_SECRET"))
    if not secret_from_env:
        os.environ["CRON_SECRET"] = _dev_secret()
    mods = [m for m in os.environ.get("CRONTICK_HANDLERS", "").split(",") if m.strip()]
    os.environ["CRONTICK_HANDLERS"] = ",".join(dict.fromkeys(["crontick.demo", *mods]))
    settings = _settings()
    url = settings.require_database_url()
    applied = asyncio.run(db.migrate(url))
    print(f"crontick dev: migrations {'applied: ' + ', '.join(applied) if applied else 'up to date'}")
    from . import demo

    demo.seed(url)
    handlers.load_modules(settings.handler_modules)
    demo.declare_schedules()  # `crontick schedules` in another shell lists it only with CRONTICK_HANDLERS set
    from .app import create_app

    base = f"http://{DEV_HOST}:{args.port}"
    print("crontick dev: demo jobs and bookings are seeded. Trigger a tick with:\n")
    print(dev_curl_line(settings.cron_secret or "", base, from_env=secret_from_env), flush=True)
    # Inbound webhooks: a Twilio WhatsApp hook signed with TWILIO_AUTH_TOKEN, or the dev secret.
    twilio_token = settings.twilio_auth_token or settings.cron_secret or ""
    demo.declare_hooks(twilio_token)
    form = {"MessageSid": "SM" + secrets.token_hex(16), "From": "whatsapp:+31612345678", "To": demo.DEMO_WHATSAPP_FROM,
            "Body": "Hello from WhatsApp"}
    print("Send a signed WhatsApp message (as Twilio would); its auto-reply prints here within a second:\n")
    print(f"  {hook_curl(base + '/api/hooks/whatsapp', form, twilio_token)}\n", flush=True)
    uvicorn.run(create_app(settings), host=DEV_HOST, port=args.port, log_level="info")
    return 0


def dev_curl_line(secret: str, base: str, *, from_env: bool) -> str:
    """The curl line `crontick dev` prints. A CRON_SECRET from the environment may be a production one
    (terminal scrollback, CI logs), so it is referenced as $CRON_SECRET and shown only masked."""
    if from_env:
        masked = f"{secret[:4]}…{secret[-2:]} ({len(secret)} characters)"
        return (f'  curl -sS -X POST -H "Authorization: Bearer $CRON_SECRET" {base}/api/cron/tick\n\n'
                f"  (CRON_SECRET comes from your environment: {masked})\n")
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
    token = os.environ.get("TWILIO_AUTH_TOKEN") or os.environ.get("CRON_SECRET") or (
        DEV_SECRET_FILE.read_text().strip() if DEV_SECRET_FILE.exists() else "")
    if not token:
        raise ConfigError("TWILIO_AUTH_TOKEN: expected the auth token to sign with (or run `crontick dev` once), got: nothing")
    form = {}
    for field in args.data:
        name, sep, value = field.partition("=")
        if not sep or not name:
            raise CrontickError(f"-d: expected NAME=VALUE such as Body=hello, got: {field!r}")
        form[name] = value
    form.setdefault("MessageSid", "SM" + secrets.token_hex(16))
    print(hook_curl(args.url, form, token))
    return 0


def _dev_secret() -> str:
    """A random secret for local development, kept under .crontick/ so the curl line stays valid."""
    if DEV_SECRET_FILE.exists():
        return DEV_SECRET_FILE.read_text().strip()
    DEV_SECRET_FILE.parent.mkdir(parents=True, exist_ok=True)
    value = "dev-" + secrets.token_urlsafe(32)
    # Created with mode 0600 (O_EXCL: never through a file someone else made), so the secret is
    # never readable by others, not even between creating and restricting the file.
    fd = os.open(DEV_SECRET_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
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
