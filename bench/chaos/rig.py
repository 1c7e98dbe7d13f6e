"""What every chaos scenario runs against: a database, `crontick serve` processes, a provider that counts."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import psycopg

from bench import server as pg
from bench.local_http import LocalHandler, LocalServer
from crontick import db
from tests.support.constants import ROOT
from tests.support.run_cli import cli_env
from tests.support.servers import free_port

from .handlers import SIDE_EFFECTS_SQL

CRONTICK = Path(sys.executable).parent / "crontick"
SECRET = "chaos-secret-" + "c" * 40
URL_VARIABLE = "CRONTICK_CHAOS_DATABASE_URL"
START_TIMEOUT_SECONDS = 30.0


class Provider(LocalServer):
    """A local reminder provider and alert receiver: counts each reminder by booking id, and can misbehave (a client
    that hangs up on a slow or endless answer is what these scenarios do on purpose)."""

    def __init__(self) -> None:
        super().__init__(_ProviderHandler)
        self.sends: Counter[int] = Counter()
        self.mode = "ok"  # ok | slow | error | reset | endless
        self.delay_seconds = 0.0

    def clear(self) -> None:
        with self.lock:
            self.sends.clear()
            self.mode, self.delay_seconds = "ok", 0.0


class _ProviderHandler(LocalHandler):
    server: Provider

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        mode, delay = self.server.mode, self.server.delay_seconds
        if mode == "reset":
            self.connection.shutdown(2)
            return
        time.sleep(delay)
        if mode == "error":
            self.answer(500, b'{"error": "provider down"}')
            return
        if mode == "endless":
            self.send_response(200)
            self.end_headers()
            for _ in range(600):  # bounded: at most a minute of trickle
                try:
                    self.wfile.write(b"x" * 1024)
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.1)
            return
        # Twilio's Messages API: form-encoded, and the chaos template puts the booking id in Body.
        text = parse_qs(body.decode(errors="replace")).get("Body", [""])[0]
        match = re.search(r"booking (\d+)", text)
        booking = int(match.group(1)) if match else -1
        with self.server.lock:
            self.server.sends[booking] += 1
        self.answer(201, json.dumps({"sid": f"SM{booking:032d}"}).encode())


@dataclass
class Server:
    """One `crontick serve` process; its stderr (the JSON log) goes to a file read afterwards."""

    base: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log_lines(self) -> list[str]:
        return self.log_path.read_text(errors="replace").splitlines()

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


@dataclass
class Rig:
    admin: str
    url: str  # conninfo of the scenario database
    provider: Provider
    workdir: Path
    servers: list[Server] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        """What `crontick serve` gets: the test CLI's clean environment (tests/support/run_cli.py), then this rig's."""
        return cli_env(
            None,
            **{
                "DATABASE_URL": pg.as_url(self.url),
                "CRON_SECRET": SECRET,
                "CRONTICK_HANDLERS": "bench.chaos.handlers",
                # The poison scenario's unknown type fails at once, as before 0.2, instead of waiting an hour
                # for a process that knows it (every chaos process runs the same code).
                "CRONTICK_UNKNOWN_TYPE_GRACE_SECONDS": "0",
                # SMS, because Twilio takes no idempotency key: crontick never resends after an
                # ambiguous outcome, so the provider's raw count per booking must never exceed one.
                "CRONTICK_REMINDER_CHANNEL": "sms",
                "CRONTICK_TWILIO_API_URL": self.provider.url,
                "TWILIO_ACCOUNT_SID": "AC" + "c" * 32,
                "TWILIO_AUTH_TOKEN": "chaos-twilio-token-" + "t" * 20,
                "CRONTICK_SMS_FROM": "+15005550006",
                "CRONTICK_REMINDER_TEMPLATE": "Hi {first_name}, booking {booking_id} is {day} at {time}.",
                **extra,
            },
        )

    @contextmanager
    def serve(
        self, env: dict[str, str] | None = None, port: int | None = None, wrapper: list[str] | None = None
    ) -> Iterator[Server]:
        """A `crontick serve` on a free loopback port, stopped (SIGTERM, then SIGKILL) on exit.

        `wrapper` (such as `faketime -f +300`) runs the server as its child: then the server gets a
        process group of its own, and the whole group is stopped.
        """
        port = port or free_port()
        log_path = self.workdir / f"serve-{port}-{time.monotonic_ns()}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [*(wrapper or []), str(CRONTICK), "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=self.env(**(env or {})),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=wrapper is not None,
            )
        server = Server(f"http://127.0.0.1:{port}", proc, log_path)
        try:
            _wait_up(server)
            self.servers.append(server)
            yield server
        finally:
            _stop(proc, group=wrapper is not None)

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            cur = conn.execute(statement, params)
            return cur.fetchall() if cur.description else []

    def reset(self) -> None:
        self.sql(
            "truncate jobs, reminder_sends, bookings, chaos_side_effects, crontick_token_uses, crontick_inbound_events "
            "restart identity cascade"
        )
        self.provider.clear()


Answer = tuple[int, str, "str | None", float]  # (status, body, Retry-After, seconds); status 0: no answer in time


def timed(method: str, url: str, timeout: float) -> Answer:
    """One request carrying the tick's bearer, timed; a hang past `timeout` is status 0."""
    began = time.monotonic()
    try:
        r = httpx.request(method, url, headers={"Authorization": f"Bearer {SECRET}"}, timeout=timeout)
    except httpx.TimeoutException:
        return 0, "", None, time.monotonic() - began
    return r.status_code, r.text, r.headers.get("retry-after"), time.monotonic() - began


def clear_503(answer: Answer, within_seconds: float) -> bool:
    """503 database_unavailable as JSON, with Retry-After and no traceback, within the time given."""
    status, text, retry_after, took = answer
    return (
        status == 503
        and '"error":"database_unavailable"' in text.replace(" ", "")
        and bool(retry_after)
        and "Traceback" not in text
        and took < within_seconds
    )


def _stop(proc: subprocess.Popen[bytes], *, group: bool) -> None:
    def signal_it(sig: signal.Signals) -> None:
        try:
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        except ProcessLookupError:
            pass

    if proc.poll() is None or group:
        signal_it(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            signal_it(signal.SIGKILL)
            proc.wait(10)
    if group:  # the wrapper may be gone while the server, its child, still stops
        for _ in range(100):
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        signal_it(signal.SIGKILL)


def _wait_up(server: Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"crontick serve exited: {server.log_path.read_text()[-2000:]}")
        try:
            httpx.get(server.base + "/api/health", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"crontick serve did not answer within {START_TIMEOUT_SECONDS:.0f} s")


@contextmanager
def rig(admin: str | None = None) -> Iterator[Rig]:
    """A fresh, migrated database (on `admin`'s server, CRONTICK_CHAOS_DATABASE_URL's, or an embedded one)
    and a provider."""
    import asyncio

    name = f"crontick_chaos_{os.getpid()}"
    with ExitStack() as stack:
        if admin is None and os.environ.get(URL_VARIABLE):
            admin = os.environ[URL_VARIABLE]
        admin = admin or pg.admin_url(stack)
        url = pg.fresh_database(admin, name)
        stack.callback(pg.drop_database, admin, name)
        asyncio.run(db.migrate(url))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(SIDE_EFFECTS_SQL)
        provider = Provider()
        threading.Thread(target=provider.serve_forever, daemon=True).start()
        stack.callback(provider.server_close)
        stack.callback(provider.shutdown)
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="crontick-chaos-")))
        yield Rig(admin, url, provider, workdir)
