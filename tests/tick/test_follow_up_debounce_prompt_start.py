"""Prompt start within the budget: a debounced job runs about `seconds` after the last enqueue, in the tick that enqueue kicked."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

import crontick
from crontick.hooks import kick
from crontick.runtime import Runtime
from crontick.tick.follow_up import FOLLOW_UP_MARGIN_SECONDS, follow_up_wait
from tests.support.hooks import settings_for

runs: list[tuple[int, Any, list[Any], float]] = []
_lock = threading.Lock()


@crontick.handler("t_promptq.reply")
def reply(payload: Any, job: crontick.Job) -> None:
    with _lock:
        runs.append((job.id, payload, job.payloads, time.monotonic()))


def test_a_debounced_job_runs_within_the_tick_the_last_enqueue_kicked(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    runs.clear()
    kick.attach(Runtime(settings_for(database_url, kick="inline")))
    try:
        debounce = crontick.Debounce("reply:+31612345678", 1, max_seconds=5)
        ids = {crontick.enqueue(conn, "t_promptq.reply", {"text": t}, debounce=debounce) for t in ("hi", "are", "you?")}
        last = time.monotonic()
        crontick.kick()  # the only tick there is: no scheduler calls
        kick.wait_for_threads()
    finally:
        kick.attach(None)
    [job_id] = ids
    assert [(r[0], r[1], r[2]) for r in runs] == [
        (job_id, {"text": "you?"}, [{"text": "hi"}, {"text": "are"}, {"text": "you?"}])
    ]
    assert 0.8 <= runs[0][3] - last <= 3.0, runs[0][3] - last
    assert conn.execute("select status from jobs where id = %s", (job_id,)).fetchone() == ("done",)
    sources = [r[0] for r in conn.execute("select source from crontick_ticks order by id").fetchall()]
    assert sources == ["kick", "kick"]  # the kicked tick found it not yet due, waited, and ran it


def test_without_work_coming_due_in_the_budget_the_tick_does_not_wait(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    crontick.enqueue(conn, "t_promptq.reply", {}, debounce=crontick.Debounce("reply:later", 60))
    kick.attach(Runtime(settings_for(database_url, kick="inline")))
    try:
        began = time.monotonic()
        crontick.kick()
        kick.wait_for_threads()
    finally:
        kick.attach(None)
    assert time.monotonic() - began < 2
    assert conn.execute("select count(*) from crontick_ticks").fetchone() == (1,)


NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def _due_in(seconds: float | None, more: bool = False) -> tuple[bool, datetime | None]:
    return more, None if seconds is None else NOW + timedelta(seconds=seconds)


def test_follow_up_wait_is_pure() -> None:
    began = NOW - timedelta(seconds=0.5)
    assert follow_up_wait(*_due_in(2), began, NOW, 8) == 2
    assert follow_up_wait(*_due_in(8 - FOLLOW_UP_MARGIN_SECONDS), began, NOW, 8) == 8 - FOLLOW_UP_MARGIN_SECONDS
    assert follow_up_wait(*_due_in(7.5), began, NOW, 8) is None  # no time left to run it
    assert follow_up_wait(*_due_in(None), began, NOW, 8) is None  # nothing pending
    assert follow_up_wait(*_due_in(2, more=True), began, NOW, 8) is None  # due work left: the next call takes it
    assert follow_up_wait(*_due_in(-1), began, NOW, 8) is None  # due before the tick began: held back, not waiting
    assert follow_up_wait(*_due_in(-0.1), began, NOW, 8) == 0  # came due while the tick ran
