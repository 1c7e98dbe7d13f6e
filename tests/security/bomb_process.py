"""Run in a process of its own by test_decompression_bomb: each outbound path meets a bomb; prints the peak growth.

Every path is first run once against benign answers (imports, pools, plans warm), then each is
run against the bombs with the resident-memory high-water mark reset before it (Linux:
`/proc/self/clear_refs` 5), so a path's figure is its own peak (VmHWM) above the memory it began
with (VmRSS). Usage: python -m tests.security.bomb_process DATABASE_URL BASE_URL (the bomb server).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

import crontick
from crontick import db
from crontick.auth import jwks
from crontick.hooks import kick
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.constants import TEST_SECRET


def status_kib(name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"expected {name} in /proc/self/status")


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM back down to VmRSS


async def measured(what: Callable[[], Awaitable[Any]]) -> tuple[int, Any]:
    """(peak growth in bytes while `what` ran, its result or the text of what it raised)."""
    reset_peak()
    start = status_kib("VmRSS")
    try:
        result: Any = await what()
    except Exception as exc:  # noqa: BLE001 - the caller asserts on the text
        result = f"{type(exc).__name__}: {exc}"
    return (status_kib("VmHWM") - start) * 1024, result


def seed(database_url: str, base: str, *, bombs: bool) -> None:
    """Webhook jobs (one failing for good, which raises an alert) and one due booking."""
    paths = ["/stacked/500", "/single/500", "/stacked/200", "/single/200"] if bombs else ["/ok"] * 4
    with psycopg.connect(database_url, autocommit=True) as conn:
        for n, path in enumerate(paths):
            crontick.enqueue(conn, "webhook", {"url": base + path, "json": {"n": n}}, max_attempts=1 if n == 0 else 4)
        conn.execute(
            "insert into bookings (customer_name, email, phone, starts_at, time_zone)"
            " values ('Ada', 'ada@example.com', '+31612345678', now() + interval '2 hours', 'UTC')"
        )


async def tick(database_url: str, settings: Settings) -> TickResult:
    conn = await db.connect(database_url)
    try:
        now: datetime = (await (await conn.execute("select now() + interval '1 second'")).fetchone())[0]  # type: ignore[index]
        return await run_tick(conn, settings, now=now + timedelta(seconds=1), source="test")
    finally:
        await conn.close()


def settings_at(database_url: str, base: str, answer: str) -> Settings:
    return Settings(
        database_url=database_url,
        cron_secret=TEST_SECRET,
        reminder_channel="webhook",
        reminder_webhook_url=f"{base}/{answer}/500",
        reminder_webhook_secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        alert_webhook_url=f"{base}/{answer}/503",
        github_oidc_issuer=f"{base}/{answer}",
        public_url=f"{base}/{answer}",
        kick="http",
        webhook_deny_private=False,  # the bomb server listens on 127.0.0.1
    )


async def paths(database_url: str, settings: Settings) -> dict[str, Any]:
    """Each path once: a tick (webhook jobs, a reminder, an alert), the JWKS fetch, the http kick."""
    jwks.reset()
    out: dict[str, Any] = {}
    for name, what in [
        ("tick", lambda: tick(database_url, settings)),
        ("jwks", lambda: jwks.signing_key(settings.github_oidc_issuer, "kid")),
        ("kick", lambda: kick._tick_http(settings)),
    ]:
        growth, result = await measured(what)
        out[name] = {"peak_growth_bytes": growth, "result": result if isinstance(result, str) else repr(result)}
    return out


def main(database_url: str, base: str) -> None:
    seed(database_url, base, bombs=False)
    warm = asyncio.run(paths(database_url, settings_at(database_url, base, "ok")))
    with psycopg.connect(database_url, autocommit=True) as conn:  # leave only the bombs' work due
        conn.execute("delete from jobs")
        conn.execute("delete from reminder_sends")
        conn.execute("delete from bookings")
        conn.execute("delete from crontick_alerts")
    seed(database_url, base, bombs=True)
    settings = settings_at(database_url, base, "stacked")
    bombed = asyncio.run(paths(database_url, settings))
    single = dataclasses.replace(settings, github_oidc_issuer=f"{base}/single", public_url=f"{base}/single")
    for name, what in [
        ("jwks_single", lambda: jwks.signing_key(single.github_oidc_issuer or "", "kid")),
        ("kick_single", lambda: kick._tick_http(single)),
    ]:
        jwks.reset()
        growth, result = asyncio.run(measured(what))
        bombed[name] = {"peak_growth_bytes": growth, "result": result if isinstance(result, str) else repr(result)}
    print(json.dumps({"warm": warm, "bombed": bombed, "vm_hwm_kib": status_kib("VmHWM")}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
