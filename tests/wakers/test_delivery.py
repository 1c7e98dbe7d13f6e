"""A wake-up's delivery names its instant (crontick.wakers.delivery): the tick it starts records the instant served,
and a second delivery for it (QStash delivers at least once; a provider retries) is answered 200 at once, saying
so, without a tick. Nothing runs twice, even when the copies arrive together. Over real HTTP: the app under
uvicorn and the QStash stand-in (tests/support/qstash_server.py), which delivers each message twice here."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.wakers.delivery import delivered_instant
from tests.support.http_checks import AUTH, TICK
from tests.support.logs import LogLines
from tests.support.waking import waking_app

RECORD = "t_wakers_delivery.record"
runs: list[int] = []
_lock = threading.Lock()


@crontick.handler(RECORD)
def record(payload: Any, job: crontick.Job) -> None:
    """Deliberately not idempotent: a job that ran twice shows up twice."""
    with _lock:
        runs.append(job.id)


def _enqueue_in(conn: psycopg.Connection[Any], seconds: float) -> int:
    row = conn.execute(
        "insert into jobs (type, payload, run_after) values (%s, '{}', now() + make_interval(secs => %s)) returning id",
        (RECORD, seconds),
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("at_once", [False, True], ids=["one-after-the-other", "together"])
def test_a_duplicate_delivery_runs_nothing_twice_and_says_so(
    database_url: str, conn: psycopg.Connection[Any], crontick_log: LogLines, at_once: bool
) -> None:
    runs.clear()
    # A budget shorter than the wait: the first tick books the job's instant instead of waiting for it in-process.
    with waking_app(database_url, time_budget_seconds=0.5) as (url, stand_in):
        stand_in.copies, stand_in.copies_at_once = 2, at_once
        job = _enqueue_in(conn, 1.5)
        first = httpx.post(url + TICK, headers=AUTH, timeout=30).json()
        assert first["wakeups"] == {"booked": 1, "failed": 0} and "delivery" not in first  # the scheduler's call
        deliveries = stand_in.wait_delivered(2, timeout=20)
    assert [d.statuses for d in deliveries] == [[200], [200]]
    assert runs == [job]  # ran once, whichever copy took it
    assert conn.execute("select status, attempts from jobs where id = %s", (job,)).fetchone() == ("done", 1)
    (instant, served_at) = conn.execute("select instant, served_at from crontick.crontick_wakeups").fetchone()
    assert served_at is not None
    events = [e for e in map(json.loads, crontick_log.lines) if e["event"] in ("tick", "wakeup_duplicate")]
    delivered = [e for e in events if e["event"] == "tick" and "delivery" in e]
    duplicates = [e for e in events if e["event"] == "wakeup_duplicate"]
    # One after the other: the second is recognised and no tick runs. Together: both may tick (the claim's
    # SKIP LOCKED keeps the job to one of them), or the second is recognised; never a second run.
    assert len(delivered) + len(duplicates) == 2 and len(delivered) >= 1
    if not at_once:
        assert len(delivered) == 1 and len(duplicates) == 1
        assert duplicates[0]["instant"] == instant.isoformat() and duplicates[0]["served_at"] == served_at.isoformat()
        assert delivered[0]["delivery"] == {"instant": instant.isoformat(), "duplicate": False, "served_at": None}


def test_a_delivery_for_an_instant_already_served_is_answered_without_a_tick(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """The answer a provider (or anyone with the credential) gets for an instant served before: 200, cheaply."""
    instant = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=3)
    served_at = instant + timedelta(seconds=1)
    conn.execute(
        "insert into crontick.crontick_wakeups (instant, provider, served_at) values (%s, 'qstash', %s)",
        (instant, served_at),
    )
    _enqueue_in(conn, -60)  # due: a tick would run it
    body = json.dumps({"crontick": "tick", "instant": instant.isoformat()})
    with waking_app(database_url) as (url, stand_in):
        response = httpx.post(url + TICK, headers=AUTH | {"Content-Type": "application/json"}, content=body)
        fresh = httpx.post(
            url + TICK,
            headers=AUTH | {"Content-Type": "application/json"},
            content=json.dumps({"crontick": "tick", "instant": (instant + timedelta(seconds=1)).isoformat()}),
        )
    assert response.status_code == 200
    answer = response.json()
    assert answer["delivery"] == {"instant": instant.isoformat(), "duplicate": True, "served_at": served_at.isoformat()}
    assert answer["jobs"]["claimed"] == 0 and answer["more"] is False
    # An instant never booked here (or pruned) is no delivery of ours: an ordinary tick runs, and takes the due job.
    assert fresh.json()["jobs"]["succeeded"] == 1 and "delivery" not in fresh.json()
    assert conn.execute("select count(*) from crontick.crontick_ticks").fetchone() == (1,)
    assert stand_in.published == []


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"crontick": "tick"}',
        b'{"crontick": "other", "instant": "2026-12-05T09:00:00+00:00"}',
        b'{"crontick": "tick", "instant": "2026-12-05T09:00:00"}',  # no offset: which clock?
        b'{"crontick": "tick", "instant": "tomorrow"}',
        b'{"crontick": "tick", "instant": 1764925200}',
    ],
)
def test_a_body_without_a_readable_instant_is_an_ordinary_tick(body: bytes) -> None:
    assert delivered_instant(body) is None


def test_the_instant_is_read_from_a_body_or_an_event() -> None:
    instant = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    assert delivered_instant(json.dumps({"crontick": "tick", "instant": instant.isoformat()}).encode()) == instant
    assert delivered_instant({"crontick": "tick", "instant": "2026-12-05T10:00:00+01:00"}) == instant


def test_a_malformed_instant_is_logged_and_the_tick_runs(database_url: str, crontick_log: LogLines) -> None:
    with waking_app(database_url) as (url, _):
        response = httpx.post(
            url + TICK,
            headers=AUTH | {"Content-Type": "application/json"},
            content=b'{"crontick":"tick","instant":"x"}',
        )
    assert response.status_code == 200 and "delivery" not in response.json()
    (event,) = [e for e in map(json.loads, crontick_log.lines) if e["event"] == "wakeup_instant_unreadable"]
    assert "expected an ISO 8601 time with its offset, got: 'x'" in event["detail"]
