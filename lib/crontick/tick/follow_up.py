"""Prompt start within the budget: whether a tick whose work is done waits for work coming due before its budget ends.

`follow_up_wait` decides (pure); `follow_up_in` asks it for a tick, by the tick's clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crontick.tick.duty import Tick

# Prompt start within the budget (CONTRACT.md "Flow control"): a tick whose work is done but that
# finds work coming due before its time budget ends (a debounce window closing, a short snooze, a
# rate limit reopening) waits for it and ticks again, so a debounced reply goes out `seconds` after
# the last message even when the only tick was that message's kick. It waits only for what comes due
# at least this long before the budget ends, so that the job has time to run.
FOLLOW_UP_MARGIN_SECONDS = 1.0
MAX_FOLLOW_UP_TICKS = 20  # a bound whatever the clocks say: each follow-up is a whole tick
# Woken this much after the due time: the offset to the database's clock is measured to within a round trip.
FOLLOW_UP_LATE_SECONDS = 0.02


def follow_up_wait(
    more: bool, next_due_at: datetime | None, began_at: datetime, now: datetime, left_seconds: float
) -> float | None:
    """Seconds to wait before ticking again inside this budget, or None to end the tick.

    From the tick's result (`more`, `next_due_at`), when it began and the time now (the database's
    clock), and the seconds left of its budget. None when the tick left work due (`more`: the next
    call takes it), when nothing is pending (`next_due_at` None), when
    what is next was already due as the tick began (held back by something a wait does not change,
    such as a group's running job or a pause), or when it falls due later than `left_seconds` minus
    FOLLOW_UP_MARGIN_SECONDS from `now`.
    """
    due = next_due_at
    if more or due is None or due <= began_at:
        return None
    wait = max((due - now).total_seconds(), 0.0)
    return wait if wait + FOLLOW_UP_MARGIN_SECONDS <= left_seconds else None


def follow_up_in(tick: Tick) -> float | None:
    """follow_up_wait for a tick whose answer is known (`more`, `next_due_at`), if its request may tick again
    in-process (`follow_ups` left); decided once, before the duties after the record statement, so that the
    wake-ups duty and crontick.tick.pipeline.run_tick agree on it."""
    if tick.follow_ups <= 0:
        return None
    now = tick.pacing.estimated_now()
    began_at = now - timedelta(seconds=tick.clock() - tick.started)
    return follow_up_wait(tick.more, tick.next_due_at, began_at, now, tick.deadline - tick.clock())
