"""book_next's races, now that the provider is called before anything is recorded (issue 35): two ticks that both
found an instant new call under the same key, and the record statement of the later says it was booked meanwhile;
a failed call never overwrites a concurrent booking; a failure is followed by a success. Against a real PostgreSQL
and the QStash stand-in over real HTTP; each tick's view of the bookings is given (crontick.wakers.ledger), so the
interleaving is the test's, not the scheduler's."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from crontick.settings import Settings
from crontick.wakers.booking import WakeupOutcome, book_next
from crontick.wakers.ledger import Ledger
from tests.support.credentials import QSTASH_CURRENT
from tests.support.qstash_server import QStashStandIn, qstash_stand_in

TOKEN = "qstash-token-for-the-stand-in"


@pytest.fixture
def stand_in() -> Any:
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as server:
        yield server


def _settings(database_url: str, stand_in: QStashStandIn) -> Settings:
    # 5 s a call: these races are not about timeouts, and under CI's load a call once took over 1 s.
    return Settings(database_url=database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                    qstash_current_signing_key=QSTASH_CURRENT, public_url="http://127.0.0.1:9",
                    wakeup_timeout_seconds=5.0)  # fmt: skip


def _book(database_url: str, settings: Settings, due: datetime, now: datetime, known: Ledger | None) -> WakeupOutcome:
    async def go() -> WakeupOutcome:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            return await book_next(conn, settings, due, now, known=known)

    return asyncio.run(go())


def _now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("select now()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


class Race:
    """A test's QStash settings, the database's now, and book(view) of an instant 20 minutes ahead from `view`."""

    def __init__(self, database_url: str, stand_in: QStashStandIn, conn: psycopg.Connection[Any]) -> None:
        self.url, self.settings, self.now = database_url, _settings(database_url, stand_in), _now(conn)

    def book(self, known: Ledger | None, minutes: int = 20) -> WakeupOutcome:
        return _book(self.url, self.settings, self.now + timedelta(minutes=minutes), self.now, known)


@pytest.fixture
def race(database_url: str, stand_in: QStashStandIn, conn: psycopg.Connection[Any]) -> Race:
    return Race(database_url, stand_in, conn)


def _rows(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(
        "select status, attempts, generation, message_id, error from crontick.crontick_wakeups order by instant"
    ).fetchall()


def test_two_ticks_that_found_an_instant_new_book_it_once(
    race: Race, stand_in: QStashStandIn, conn: psycopg.Connection[Any]
) -> None:
    # Both probes ran before either booking was recorded: each sees no booking.
    first = race.book(Ledger())
    second = race.book(Ledger())
    assert (first.status, first.booked) == ("booked", 1)
    assert (second.status, second.booked, second.failed) == ("already", 0, 0) and second.duplicate
    # Two calls under one key: QStash deduplicated the second into the first message, delivered once.
    assert len(stand_in.published) == 2 and len(stand_in.deliveries) == 1
    assert second.message_id == first.message_id
    assert _rows(conn) == [("booked", 1, 1, first.message_id, None)]


def test_a_failed_call_never_overwrites_a_concurrent_booking(
    race: Race, stand_in: QStashStandIn, conn: psycopg.Connection[Any]
) -> None:
    booked = race.book(Ledger())
    stand_in.fail_next.append(503)  # the other tick's call, made from the same stale view, fails
    raced = race.book(Ledger())
    assert booked.status == "booked" and (raced.status, raced.failed, raced.error) == ("already", 0, None)
    assert _rows(conn) == [("booked", 1, 1, booked.message_id, None)]  # no failure recorded, so no alert counts it
    assert conn.execute("select count(*) from crontick.crontick_alerts").fetchone() == (0,)


def test_a_failure_then_a_success_from_the_probes_rows(
    race: Race, stand_in: QStashStandIn, conn: psycopg.Connection[Any]
) -> None:
    stand_in.fail_next.append(500)
    failed = race.book(Ledger())
    assert failed.status == "failed" and failed.attempt == 1
    ((status, attempts, generation, message_id, error),) = _rows(conn)  # the failure made the row
    assert (status, attempts, generation, message_id) == ("failed", 1, 1, None) and "answered 500" in error
    known = _ledger(conn)
    assert known.plan(failed.instant or race.now).attempt == 2
    again = race.book(known)
    assert (again.status, again.attempt) == ("booked", 2)
    assert _rows(conn) == [("booked", 2, 1, again.message_id, error)]  # the last failure kept for the admin
    assert len(stand_in.deliveries) == 1


def test_a_success_after_a_concurrent_failure_stands(
    race: Race, stand_in: QStashStandIn, conn: psycopg.Connection[Any]
) -> None:
    stand_in.fail_next.append(500)
    race.book(Ledger())
    late = race.book(Ledger())  # its view predates the failure: attempt 1
    assert late.status == "booked" and _rows(conn)[0][:2] == ("booked", 1)


def test_a_cancelled_instant_is_booked_under_a_new_key_from_the_probes_rows(
    race: Race, stand_in: QStashStandIn, conn: psycopg.Connection[Any]
) -> None:
    first = race.book(minutes=5, known=_ledger(conn))
    race.book(minutes=9, known=_ledger(conn))  # supersedes the first
    assert [r[0] for r in _rows(conn)] == ["cancelled", "booked"]
    # A tick with the pre-cancel view calls under the cancelled key: the statement keeps the cancel, counts already.
    stale = race.book(minutes=5, known=Ledger())
    assert stale.status == "already" and _rows(conn)[0][:3] == ("cancelled", 1, 1)
    again = race.book(minutes=5, known=_ledger(conn))
    assert again.status == "booked" and again.instant == first.instant and _rows(conn)[0][:3] == ("booked", 1, 2)
    keys = [p["headers"]["upstash-deduplication-id"] for p in stand_in.published]
    assert "-g2-" in keys[-1] and "-g2-" not in keys[0]


def _ledger(conn: psycopg.Connection[Any]) -> Ledger:
    row = conn.execute("select crontick.crontick_wakeup_ledger(now(), 16)").fetchone()
    assert row is not None
    known = Ledger.of(row[0])
    assert known is not None
    return known
