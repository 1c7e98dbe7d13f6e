"""The bookings a tick books from without a statement of its own: the probe's rows of crontick_wakeups, and what
they say about an instant.

The probe reads the first ROWS bookings from its `now` on (sql/functions/wakeup_ledger.sql), only when a waker is
set. From them, crontick.wakers.booking.book_next decides before any statement whether to call the provider
(`plan`) and which superseded bookings to cancel alongside (`superseded`); the one statement after the call records
what happened, and says when a concurrent tick booked the same instant meanwhile (the rows are a snapshot: a tick
that finds an instant new may find it booked when it records). An instant beyond the rows read is taken as new: the
provider deduplicates a repeated key, and the record statement finds it booked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from crontick.db import query

if TYPE_CHECKING:
    import psycopg

# How many bookings from now on the probe returns: the next instants, and those a booking may supersede.
ROWS = 16
# At most this many superseded bookings are cancelled by one tick's booking (each is one provider call, made
# alongside the booking's); any more are cancelled by the next bookings, or just arrive as empty ticks.
CANCEL_PER_TICK = 3


class Entry(NamedTuple):
    """One row of crontick_wakeups as the probe read it."""

    instant: datetime
    provider: str
    status: str  # booked, failed or cancelled
    generation: int = 1  # the instant's key: booked again after a cancel, the next generation
    attempts: int = 1  # the provider calls of this generation so far
    message_id: str | None = None
    served: bool = False  # its delivery came: its key is spent, it is never booked again

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Entry:
        return cls(datetime.fromisoformat(row["instant"]), row["provider"], row["status"], int(row["generation"]),
                   int(row["attempts"]), row["message_id"], bool(row["served"]))  # fmt: skip


class Plan(NamedTuple):
    """How to book one instant. `call` False: it is booked (or served) already: no call, no statement. Else the call's
    `attempt` (2 and more: this generation failed before) and `generation` (a cancelled instant's next)."""

    call: bool
    attempt: int = 1
    generation: int = 1


class Ledger(NamedTuple):
    """The bookings from the probe's `now` on, the first ROWS by instant."""

    entries: tuple[Entry, ...] = ()

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]] | None) -> Ledger | None:
        """From the probe's `wakeups.bookings` (jsonb objects); None when the probe did not read them."""
        return None if rows is None else cls(tuple(Entry.of(r) for r in rows))

    def plan(self, instant: datetime) -> Plan:
        """Whether to call the provider for `instant`, and as which attempt of which generation."""
        entry = next((e for e in self.entries if e.instant == instant), None)
        if entry is None:  # new, or beyond the rows read
            return Plan(True)
        if entry.served or entry.status == "booked":
            return Plan(False)
        if entry.status == "failed":
            return Plan(True, entry.attempts + 1, entry.generation)
        return Plan(True, 1, entry.generation + 1)  # cancelled: the old key is spent at the provider

    def superseded(
        self, provider: str, now: datetime, before: datetime, delivered: datetime | None = None
    ) -> tuple[Entry, ...]:
        """The bookings of `provider` after `now` and before `before` (nothing is due before it), booked and not
        served (nor `delivered`, whose delivery started this tick, early): the first CANCEL_PER_TICK, to cancel
        alongside the booking."""
        found = (e for e in self.entries if now < e.instant < before and e.status == "booked" and not e.served
                 and e.provider == provider and e.instant != delivered)  # fmt: skip
        return tuple(found)[:CANCEL_PER_TICK]

    def noted(self, changed: Iterable[Entry]) -> Ledger:
        """These rows as they are now (a tick's own statement changed them), the others as read."""
        by_instant = {e.instant: e for e in self.entries}
        by_instant.update((e.instant, e) for e in changed)
        return Ledger(tuple(sorted(by_instant.values())))


async def read(conn: psycopg.AsyncConnection[Any]) -> tuple[datetime, Ledger]:
    """The database's clock and the bookings from it on, in one statement: for a booking without a probe (a kick's
    with CRONTICK_KICK=off, a drain's later batches)."""
    cur = await conn.execute(query("wakeup_ledger"), {"rows": ROWS})
    row = await cur.fetchone()
    assert row is not None  # one row always
    known = Ledger.of(row[1])
    assert known is not None
    return row[0], known
