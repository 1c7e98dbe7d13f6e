"""crontick.wakers.ledger, pure: what the probe's rows of crontick_wakeups say about an instant (book it or not, as
which attempt of which generation) and which bookings a booking supersedes, without a statement."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crontick.wakers.ledger import CANCEL_PER_TICK, Entry, Ledger, Plan

NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return NOW + timedelta(minutes=minutes)


def test_rows_from_the_probe_are_read_by_name() -> None:
    row = {"instant": "2026-12-05T09:05:00+00:00", "provider": "qstash", "status": "failed", "generation": 2,
           "attempts": 3, "message_id": None, "served": False}  # fmt: skip
    assert Ledger.of([row]) == Ledger((Entry(at(5), "qstash", "failed", 2, 3, None, False),))
    assert Ledger.of(None) is None  # the probe did not read them (a claim took its place)
    assert Ledger.of([]) == Ledger()


def test_the_plan_of_an_instant_follows_its_row() -> None:
    known = Ledger((
        Entry(at(1), "qstash", "booked"),
        Entry(at(2), "qstash", "failed", generation=1, attempts=2),
        Entry(at(3), "qstash", "cancelled", generation=2, attempts=1),
        Entry(at(4), "qstash", "cancelled", served=True),
        Entry(at(5), "eventbridge", "booked"),
    ))  # fmt: skip
    assert known.plan(at(1)) == Plan(False)  # booked already: no call, no statement
    assert known.plan(at(2)) == Plan(True, attempt=3, generation=1)  # failed twice: the third call, same key
    assert known.plan(at(3)) == Plan(True, attempt=1, generation=3)  # cancelled: a new key
    assert known.plan(at(4)) == Plan(False)  # served: its key is spent, never booked again
    assert known.plan(at(5)) == Plan(False)  # booked by another provider: the instant is the key
    assert known.plan(at(6)) == Plan(True, attempt=1, generation=1)  # new, or beyond the rows read


def test_superseded_are_the_first_booked_of_the_provider_between_now_and_the_work() -> None:
    known = Ledger((
        Entry(NOW, "qstash", "booked"),  # not after now
        Entry(at(1), "qstash", "booked", served=True),
        Entry(at(2), "qstash", "failed"),
        Entry(at(3), "cloudtasks", "booked"),
        Entry(at(4), "qstash", "booked", generation=2, message_id="m4"),
        Entry(at(5), "qstash", "booked"),  # the delivery that started this tick, early
        Entry(at(6), "qstash", "booked"),
        Entry(at(7), "qstash", "booked"),
        Entry(at(8), "qstash", "booked"),
        Entry(at(9), "qstash", "booked"),  # the work's due time: not superseded
    ))  # fmt: skip
    found = known.superseded("qstash", NOW, at(9), delivered=at(5))
    assert [e.instant for e in found] == [at(4), at(6), at(7)] and len(found) == CANCEL_PER_TICK
    assert found[0].generation == 2 and found[0].message_id == "m4"  # its key and id, for the cancel
    assert known.superseded("qstash", NOW, at(4)) == ()


def test_noted_rows_replace_those_read() -> None:
    known = Ledger((Entry(at(1), "qstash", "booked"), Entry(at(3), "qstash", "booked")))
    after = known.noted([Entry(at(1), "qstash", "cancelled"), Entry(at(2), "qstash", "booked")])
    assert [(e.instant, e.status) for e in after.entries] == [
        (at(1), "cancelled"),
        (at(2), "booked"),
        (at(3), "booked"),
    ]
    assert after.plan(at(1)) == Plan(True, 1, 2)
