"""Superseded bookings are cancelled (issue 35, wake-ups per day): a tick that books instant T marks the bookings
before the work's due time cancelled in its claim's statement and deletes them at the provider alongside the
booking; a cancel that fails never fails the booking; a cancelled instant booked again gets a new key.
Against a real PostgreSQL and the QStash stand-in over real HTTP (tests/support/qstash_server.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from crontick.settings import Settings
from crontick.wakers import registry
from crontick.wakers.booking import WakeupOutcome, book_next, booking_key, status
from tests.support.credentials import QSTASH_CURRENT
from tests.support.logs import LogLines
from tests.support.qstash_server import QStashStandIn, qstash_stand_in
from tests.support.reminders import recording_server

TOKEN = "qstash-token-for-the-stand-in"


@pytest.fixture
def stand_in() -> Any:
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as server:
        yield server


def _events(lines: LogLines, name: str) -> list[dict[str, Any]]:
    return [e for e in (json.loads(line) for line in lines.lines) if e.get("event") == name]


def _settings(database_url: str, stand_in: QStashStandIn, public_url: str = "http://127.0.0.1:9") -> Settings:
    return Settings(database_url=database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                    qstash_current_signing_key=QSTASH_CURRENT, public_url=public_url,
                    wakeup_timeout_seconds=1.0)  # fmt: skip


def _now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("select now()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


async def _book(database_url: str, settings: Settings, due: datetime, now: datetime) -> WakeupOutcome:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        return await book_next(conn, settings, due, now)


def _rows(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(
        "select instant, status, generation, message_id is not null from crontick.crontick_wakeups order by instant"
    ).fetchall()


def test_a_superseded_booking_is_cancelled_at_the_provider_and_not_next(
    database_url: str, stand_in: QStashStandIn, conn: psycopg.Connection[Any]
) -> None:
    settings = _settings(database_url, stand_in)
    now = _now(conn)
    first = asyncio.run(_book(database_url, settings, now + timedelta(minutes=5), now))
    second = asyncio.run(_book(database_url, settings, now + timedelta(minutes=9), now))
    assert (first.status, second.status) == ("booked", "booked")
    assert stand_in.cancelled == [first.message_id]
    assert [(r[1], r[2], r[3]) for r in _rows(conn)] == [("cancelled", 1, True), ("booked", 1, True)]
    assert asyncio.run(_next_booked(database_url, now)) == second.instant


async def _next_booked(database_url: str, now: datetime) -> datetime | None:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        return (await status(conn, now)).next_booked_at


def test_work_enqueued_since_the_probe_is_booked_again_at_once(
    database_url: str, stand_in: QStashStandIn, conn: psycopg.Connection[Any], crontick_log: LogLines
) -> None:
    settings = _settings(database_url, stand_in)
    now = _now(conn)
    first = asyncio.run(_book(database_url, settings, now + timedelta(minutes=5), now))
    # a job due at the first instant committed after the (simulated) probe that found work due only later
    conn.execute("insert into jobs (type, payload, run_after) values ('noop', '{}', %s)", (now + timedelta(minutes=5),))
    conn.commit()
    later = asyncio.run(_book(database_url, settings, now + timedelta(minutes=9), now))
    # The cancel went out alongside the booking; the record statement saw the job and said so: booked again under
    # the next generation's key, in the same call of book_next.
    assert later.status == "booked" and stand_in.cancelled == [first.message_id]
    assert [r[1:3] for r in _rows(conn)] == [("booked", 2), ("booked", 1)]
    assert first.instant and later.instant
    assert sorted(d.due_at for d in stand_in.pending()) == [first.instant.timestamp(), later.instant.timestamp()]
    assert len(_events(crontick_log, "wakeup_cancel_raced")) == 1


def test_a_cancelled_instant_booked_again_gets_a_new_key(
    database_url: str, stand_in: QStashStandIn, conn: psycopg.Connection[Any]
) -> None:
    settings = _settings(database_url, stand_in)
    now = _now(conn)
    first = asyncio.run(_book(database_url, settings, now + timedelta(minutes=5), now))
    asyncio.run(_book(database_url, settings, now + timedelta(minutes=9), now))
    again = asyncio.run(_book(database_url, settings, now + timedelta(minutes=5), now))
    assert again.status == "booked" and again.instant == first.instant
    provider = registry.provider_for(settings)
    assert provider is not None and first.instant is not None
    keys = [p["headers"]["upstash-deduplication-id"] for p in stand_in.published]
    assert keys[0] == booking_key(provider, settings, first.instant)
    assert keys[2] == booking_key(provider, settings, first.instant, 2) != keys[0]
    assert "-g2-" in keys[2] and len(keys[2]) <= 64
    assert again.message_id != first.message_id  # not deduplicated into the cancelled message
    assert _rows(conn)[0][1:3] == ("booked", 2)


def test_a_cancel_that_fails_or_hangs_never_fails_the_booking(
    database_url: str, stand_in: QStashStandIn, conn: psycopg.Connection[Any], crontick_log: LogLines
) -> None:
    settings = _settings(database_url, stand_in)
    now = _now(conn)
    asyncio.run(_book(database_url, settings, now + timedelta(minutes=5), now))
    conn.execute("update crontick.crontick_wakeups set message_id = 'msg_unknown'")  # its cancel answers 404
    conn.commit()
    ok = asyncio.run(_book(database_url, settings, now + timedelta(minutes=9), now))
    assert ok.status == "booked" and _events(crontick_log, "wakeup_cancel_failed") == []
    conn.execute("update crontick.crontick_wakeups set message_id = null")  # nothing to cancel it by: logged
    conn.execute("update crontick.crontick_wakeups set status = 'booked'")
    conn.commit()
    started = time.monotonic()
    later = asyncio.run(_book(database_url, settings, now + timedelta(minutes=12), now))
    assert later.status == "booked" and time.monotonic() - started < 2.0 * settings.wakeup_timeout_seconds + 1
    failed = _events(crontick_log, "wakeup_cancel_failed")
    assert len(failed) == 2 and all(e["provider"] == "qstash" for e in failed)


def test_a_cancel_that_does_not_answer_leaves_the_booking_within_its_timeout(
    database_url: str, stand_in: QStashStandIn, conn: psycopg.Connection[Any], crontick_log: LogLines
) -> None:
    settings = _settings(database_url, stand_in)
    now = _now(conn)
    first = asyncio.run(_book(database_url, settings, now + timedelta(minutes=5), now))
    stand_in.stall_cancel_seconds = 5.0
    started = time.monotonic()
    second = asyncio.run(_book(database_url, settings, now + timedelta(minutes=9), now))
    took = time.monotonic() - started
    assert second.status == "booked" and took < 2.0 * settings.wakeup_timeout_seconds + 1.0
    assert [e["instant"] for e in _events(crontick_log, "wakeup_cancel_failed")] == [first.instant.isoformat()]  # type: ignore[union-attr]


def test_a_cancelled_message_is_never_delivered(database_url: str, conn: psycopg.Connection[Any]) -> None:
    with recording_server() as app, qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = _settings(database_url, stand_in, public_url=app.url)
        now = _now(conn)
        first = asyncio.run(_book(database_url, settings, now + timedelta(seconds=2), now))
        second = asyncio.run(_book(database_url, settings, now + timedelta(seconds=3), now))
        assert stand_in.cancelled == [first.message_id]
        delivered = stand_in.wait_delivered(1, timeout=10)
        time.sleep(1.0)
        assert [d.message_id for d in stand_in.deliveries if d.delivered_at] == [second.message_id]
        assert len(delivered) == 1


def test_a_cancelled_instant_booked_again_is_delivered_under_its_new_key(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with recording_server() as app, qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = _settings(database_url, stand_in, public_url=app.url)
        now = _now(conn)
        first = asyncio.run(_book(database_url, settings, now + timedelta(seconds=2), now))
        second = asyncio.run(_book(database_url, settings, now + timedelta(seconds=3), now))
        again = asyncio.run(_book(database_url, settings, now + timedelta(seconds=2), now))  # new work at it
        stand_in.wait_delivered(2, timeout=10)
        time.sleep(1.0)
        delivered = [d.message_id for d in stand_in.deliveries if d.delivered_at]
    assert again.status == "booked" and again.instant == first.instant and stand_in.cancelled == [first.message_id]
    assert sorted(delivered) == sorted([again.message_id, second.message_id])


def test_concurrent_ticks_book_a_later_instant_once_and_cancel_the_earlier_once(
    database_url: str, stand_in: QStashStandIn, conn: psycopg.Connection[Any]
) -> None:
    # Eight calls at once: under load one took over the 1 s the other tests allow, failed, and published nothing
    # (the record statement then counted it `already`): this test is about the race, not the timeout.
    settings = dataclasses.replace(_settings(database_url, stand_in), wakeup_timeout_seconds=5.0)
    now = _now(conn)
    first = asyncio.run(_book(database_url, settings, now + timedelta(minutes=5), now))

    async def all_at_once() -> list[WakeupOutcome]:
        due = now + timedelta(minutes=9)
        return list(await asyncio.gather(*(_book(database_url, settings, due, now) for _ in range(8))))

    outcomes = asyncio.run(all_at_once())
    assert sorted(o.status for o in outcomes) == ["already"] * 7 + ["booked"]
    # each tick called (the provider deduplicated the seven repeats) and cancelled; the first cancel deleted it
    assert stand_in.cancelled == [first.message_id] and len(stand_in.published) == 9
    assert len(stand_in.deliveries) == 2 and len(stand_in.pending()) == 1
    assert [r[1] for r in _rows(conn)] == ["cancelled", "booked"]
