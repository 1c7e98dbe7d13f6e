"""What a wake-up booking costs a tick, counted on the wire (libpq's trace, tests/support/wire.py) and at the
QStash stand-in: statements and HTTP calls of in-process ticks with CRONTICK_WAKER=none and =qstash."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg

import crontick
from crontick.settings import Settings
from crontick.tick.pipeline import run_tick
from tests.support.credentials import QSTASH_CURRENT
from tests.support.qstash_server import qstash_stand_in
from tests.support.wire import traced

from .report import table

TOKEN = "qstash-token-for-the-wire-count"
JOB_TYPE = "bench_wakeup_wire_noop"


@crontick.handler(JOB_TYPE)
async def noop(payload: Any, job: crontick.Job) -> None:
    """Nothing: the tick's statements are what is counted."""


def _reset(url: str, *, future: bool = False, due: bool = False) -> None:
    """No jobs and no bookings, then a job due in an hour (`future`) and one due now (`due`)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("truncate crontick.jobs, crontick.crontick_wakeups cascade")
        now = conn.execute("select now()").fetchone()
        assert now is not None
        if future:
            crontick.enqueue(conn, JOB_TYPE, {}, run_after=now[0] + timedelta(hours=1))
        if due:
            crontick.enqueue(conn, JOB_TYPE, {})


def _count(url: str, settings: Settings) -> int:
    _, names = traced(url, lambda conn: run_tick(conn, settings, source="bench"))
    return len(names)


def measure(url: str) -> dict[str, Any]:
    """Per case, the statements of a tick without a waker and with one, and the HTTP calls it made."""
    cases: list[tuple[str, Callable[[], None], bool]] = [
        ("nothing pending: books nothing", lambda: _reset(url), False),
        ("a job due in an hour: books it", lambda: _reset(url, future=True), False),
        ("the same instant already booked", lambda: _reset(url, future=True), True),
        ("a job due now and one in an hour: runs one, books one", lambda: _reset(url, future=True, due=True), False),
    ]
    out = []
    with qstash_stand_in(TOKEN, QSTASH_CURRENT, held=True) as stand_in:
        none = Settings(database_url=url)
        waker = Settings(database_url=url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                         public_url="http://127.0.0.1:9")  # fmt: skip
        for name, reset, booked_before in cases:
            reset()
            without = _count(url, none)
            reset()
            if booked_before:
                _count(url, waker)
            published = len(stand_in.published)
            with_waker = _count(url, waker)
            out.append({"case": name, "statements_without": without, "statements_with": with_waker,
                        "http_calls": len(stand_in.published) - published})  # fmt: skip
    return {"cases": out, "most_added_statements": max(c["statements_with"] - c["statements_without"] for c in out),
            "most_http_calls": max(c["http_calls"] for c in out)}  # fmt: skip


def render(result: dict[str, Any]) -> str:
    rows = [(c["case"], str(c["statements_without"]), str(c["statements_with"]), str(c["http_calls"]))
            for c in result["cases"]]  # fmt: skip
    return table(
        "a tick's cost with a waker (in-process, counted on the wire)",
        ("tick", "statements, no waker", "statements, qstash", "HTTP calls"),
        rows,
    )
