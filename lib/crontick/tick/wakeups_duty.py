"""The wake-ups duty: book this app's next tick at the instant work comes due (CRONTICK_WAKER, crontick.wakers).

After the record statement (and on an idle tick, after the probe), before the tick answers: a
function may be frozen the moment it has answered. It books at the tick's `next_due_at` (by the
database's clock) through crontick.wakers.booking.book_next, which costs one statement and one
HTTP call and never raises (none of either when the probe's bookings, which it asks for, show the
instant booked already); a tick that answers `more: true` books its follow-up at once. With
CRONTICK_WAKER=none it costs nothing: no statement, the probe reads no booking, and crontick.wakers
is not imported; with nothing pending, no statement. Nor does it book work its own request will run
in-process before answering (crontick.tick.follow_up). A tick started by a wake-up's delivery records
that instant as served (in the booking's one statement, or one of its own when it calls no provider).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from crontick.tick.duty import Duty, Tick


class WakeupCounts(NamedTuple):
    """What a tick's booking counted (0 or 1 each): the tick's summary shows it as `wakeups`."""

    booked: int = 0
    failed: int = 0


class Delivery(NamedTuple):
    """The wake-up whose delivery started a tick: its instant, and when it had been served already (None: not, this
    tick serves it; else the delivery is a duplicate and no tick ran). The tick's answer shows it as `delivery`."""

    instant: datetime
    served_before: datetime | None = None

    @classmethod
    def of(cls, tick: Tick) -> Delivery | None:
        return cls(tick.delivered) if tick.delivered is not None else None

    def to_json(self) -> dict[str, Any]:
        served = self.served_before
        return {"instant": self.instant.isoformat(), "duplicate": served is not None,
                "served_at": served.isoformat() if served else None}  # fmt: skip


class WakeupsDuty(Duty):
    name = "wakeups"
    after_record = True  # before alerts: an alert it raises goes out in this very tick

    def asks(self, tick: Tick, now: datetime) -> dict[str, Any] | None:
        """With a waker set, the bookings from now on (crontick.wakers.ledger), which it books from."""
        if tick.settings.waker == "none":
            return None
        from crontick.wakers import ledger

        return {"bookings": ledger.ROWS}

    async def run(self, tick: Tick) -> WakeupCounts | None:
        """None: no waker set (the summary has no `wakeups` key); zeros when nothing was booked."""
        if tick.settings.waker == "none":
            return None
        # Nothing pending, or work this request runs itself in-process (crontick.tick.follow_up): a booking would
        # only deliver an empty tick. Not even a statement, unless a delivery is to be recorded as served.
        if tick.next_due_at is None or tick.follow_up_in is not None:
            if tick.delivered is not None:
                from crontick.wakers import booking

                await booking.serve(tick.conn, tick.delivered)
            return WakeupCounts()
        from crontick.wakers import booking  # with its provider: only where a waker is set
        from crontick.wakers.ledger import Ledger

        # None when a claim took the probe's place (a drain's later batches): book_next reads them itself.
        known = Ledger.of(tick.part(self.name).get("bookings"))
        outcome = await booking.book_next(
            tick.conn, tick.settings, tick.next_due_at, tick.time, more=tick.more, delivered=tick.delivered,
            known=known,
        )  # fmt: skip
        # A failure recorded may have raised the alert after repeated ones (sql/functions/wakeup_failed.sql).
        tick.alerts_raised = tick.alerts_raised or bool(outcome.failed)
        return WakeupCounts(outcome.booked, outcome.failed)


DUTY = WakeupsDuty()
