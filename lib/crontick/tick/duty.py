"""The interface every per-tick duty has (crontick.tick.duties lists them), and the tick as a duty sees it.

A duty (River's internal/maintenance/*.go are the model) is one module with one instance of a Duty
subclass: what it asks of the probe (its key of the probe's parameters), what it runs given the
probe's answer (its key of Probe.duties), the tick's `now` and connection, and a small frozen value
of what it counted. It runs either before the tick's batch of jobs or after the tick's record
statement (`after_record`), and costs no statement when the probe found nothing for it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg

from crontick.settings import Settings
from crontick.tick.pacing import Pacing

if TYPE_CHECKING:
    from crontick.jobs.job import Job
    from crontick.tick.record import Recorded

_NOTHING: Mapping[str, Any] = {}


class Tick:  # not a dataclass: every tick's cold start imports this module
    """One tick, as its duties see it: set up before the probe, then filled in as the tick goes."""

    __slots__ = (
        "conn", "settings", "pacing", "clock", "deadline", "now", "claim_now", "send_reminders", "answer", "jobs",
        "recorded", "more", "next_due_at", "alerts_raised", "_out_of_time", "started", "follow_ups", "follow_up_in",
        "delivered", "found_next", "expired",
    )  # fmt: skip

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        settings: Settings,
        pacing: Pacing,
        clock: Callable[[], float],
        deadline: float,
        now: datetime | None,
        *,
        send_reminders: bool = True,
        follow_ups: int = 0,
        delivered: datetime | None = None,
    ) -> None:
        self.conn = conn
        self.settings = settings
        self.pacing = pacing
        self.clock = clock
        self.deadline = deadline  # a clock() time: when this tick's budget ends
        # The tick's time: the caller's, else (None until the probe answers) the database's clock as the
        # first statement read it; after the record statement, when the tick finished (see pipeline.work).
        self.now = now
        # Claims after the first statement take the database's clock again (None), or a test's faked time.
        self.claim_now = now
        self.send_reminders = send_reminders  # False: reminders wait for a later tick
        # Each duty's part of the probe's answer, by its name (the claim's, when it took the probe's place).
        self.answer: Mapping[str, Mapping[str, Any]] = _NOTHING
        self.jobs: list[Job] = []  # the batch claimed so far
        self.expired = 0  # jobs its claims ended `cancelled` past their start_by (jobs.expired)
        self.recorded: Recorded | None = None  # the record statement's answer, for the duties after it
        # The tick's answer, known before the duties after the record statement run (the wake-ups duty books it):
        # whether it left work due now, and when work is next due (None: nothing pending).
        self.more = False
        self.next_due_at: datetime | None = None
        # A duty's next time found by its own run, for one that was due at the probe (whose time was of what it did):
        # by the duty's name (crontick.tick.reminders_duty, with a waker set).
        self.found_next: dict[str, datetime | None] = {}
        self.alerts_raised = False  # a duty after the record statement may have raised an alert: the alerts duty looks
        self._out_of_time: bool | None = None
        self.started = clock()
        # How many more ticks this request may run in-process (crontick.tick.pipeline.run_tick; 0: none), and, once
        # the tick's answer is known, in how many seconds it will run the next (None: it will not). The wake-ups
        # duty books nothing for work this request runs itself.
        self.follow_ups = follow_ups
        self.follow_up_in: float | None = None
        self.delivered = delivered  # the instant of the wake-up whose delivery started this tick (crontick.wakers)

    def part(self, name: str) -> Mapping[str, Any]:
        """A duty's key of the probe's answer; empty when the probe did not ask (a claim took its place)."""
        return self.answer.get(name, _NOTHING)

    @property
    def time(self) -> datetime:
        """`now`, once the probe has answered."""
        assert self.now is not None, "the tick's time is known once the probe has answered"
        return self.now

    @property
    def out_of_time(self) -> bool:
        """Whether the budget had run out when first asked (after the reminders, which go first whatever
        the budget): the duties after them and the tick's answer (`more`) agree on it."""
        if self._out_of_time is None:
            self._out_of_time = self.clock() >= self.deadline
        return self._out_of_time


class Duty(ABC):
    """One per-tick duty. `name`: its key of the probe's parameters and of its answer (Probe.duties)."""

    name: ClassVar[str]
    after_record: ClassVar[bool] = False  # runs after the record statement (and on an idle tick), not before the batch

    def asks(self, tick: Tick, now: datetime) -> Mapping[str, Any] | None:
        """Its parameters for the probe (JSON values), by `now` (the caller's, else this process's estimate
        of the database's clock); None: it asks nothing."""
        return None

    @abstractmethod
    async def run(self, tick: Tick) -> Any:
        """Do what the probe found due, and return what it counted (its zero when nothing was due)."""

    def next_at(self, tick: Tick) -> datetime | None:
        """When it falls due next, if it was not due at the probe (what it did since shows at the next probe)."""
        return None

    def made_due(self, counts: Any) -> bool:
        """Whether its run made jobs due now, which the tick then claims into its batch."""
        return False


def when(part: Mapping[str, Any], key: str) -> datetime | None:
    """A time in a duty's part of the probe's answer (jsonb gives it as ISO 8601 text)."""
    value = part.get(key)
    return datetime.fromisoformat(value) if value is not None else None
