"""A batch's budget as its workflows see it: job.time_left, the steps that do not fit what is left (a yield), and
the handlers the budget stopped, whose later steps raise (CONTRACT.md "Workflows that outlive a tick").

crontick.jobs.runner tells it when each job's run begins and when the budget stops one;
crontick.workflows.steps asks it before each step, and tells it each step it recorded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from crontick.errors import StepError
from crontick.logs import RunningJob
from crontick.workflows.policy import StepPolicy


class Deferred(BaseException):
    """Raised out of a handler by a step declared with timeout_seconds that does not fit what is left of the tick's
    budget: the runner yields the job (crontick.jobs.decision.yields) or, without progress, fails its attempt.

    A BaseException, like Parked: a handler's `except Exception` must not swallow it.
    """

    def __init__(self, text: str, new_steps: int, started_late: bool) -> None:
        super().__init__(text)
        self.new_steps, self.started_late = new_steps, started_late


class RunBudget:
    """The runs of one batch's jobs against the tick's budget, which ends at `deadline` (a `clock()` time) of a
    whole `budget_seconds`. Sync handlers' threads and the loop both use it: `_lock` orders them."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        deadline: float = float("inf"),
        budget_seconds: float = float("inf"),
    ) -> None:
        self.clock, self.deadline, self.budget_seconds = clock, deadline, budget_seconds
        self._lock = threading.Lock()
        self._ends: dict[int, float] = {}  # job id -> when its run ends (a clock() time)
        self._left_at_start: dict[int, float] = {}
        self._new: dict[int, int] = {}  # job id -> steps recorded in this run
        self._cut: dict[int, str] = {}  # jobs the budget (or their timeout) stopped, and by what: their steps raise

    def recorded(self, job_ids: Iterable[int]) -> None:
        """Steps of these jobs were recorded in this run (one id per step)."""
        with self._lock:
            for job_id in job_ids:
                self._new[job_id] = self._new.get(job_id, 0) + 1

    def started(self, job: RunningJob, ends_at: float) -> None:
        """The runner: `job`'s run begins, and ends at `ends_at` (its timeout's end or the budget's)."""
        self._ends[job.id] = ends_at
        self._left_at_start[job.id] = ends_at - self.clock()

    def stop(self, job: RunningJob, by: str = "the tick's budget") -> int:
        """The runner, at the budget (or a sync handler's timeout_seconds, `by`): `job`'s steps raise from now on.
        Returns how many steps this run recorded."""
        with self._lock:
            self._cut[job.id] = by
            return self._new.get(job.id, 0)

    def time_left(self, job: RunningJob) -> float:
        if job.id in self._cut:
            return 0.0
        return max(0.0, self._ends.get(job.id, self.deadline) - self.clock())

    def check_running(self, job: RunningJob, name: str) -> None:
        """A StepError, recording nothing, once the budget has stopped `job` (a def handler's thread runs on)."""
        by = self._cut.get(job.id)
        if by is not None:
            raise StepError(
                f"job {job.id} ({job.type}) step {name!r}: expected a running handler, got one {by} "
                "had already stopped (its thread ran on); the step was not run and nothing was recorded"
            )

    def check_fits(self, job: RunningJob, name: str, policy: StepPolicy) -> None:
        """A step declared with timeout_seconds starts only when what is left of the budget covers it."""
        limit = policy.timeout_seconds
        if limit is None:
            return
        if limit > self.budget_seconds:
            raise StepError(
                f"job {job.id} ({job.type}) step {name!r}: expected a timeout_seconds within the tick's budget "
                f"(CRONTICK_TIME_BUDGET_SECONDS, {self.budget_seconds:g} s), got {limit:g}: it could never start"
            )
        left = self.deadline - self.clock()
        if limit <= left:
            return
        new_steps = self._new.get(job.id, 0)
        late = self._left_at_start.get(job.id, left) < limit
        raise Deferred(
            f"StepDeferred: job {job.id} ({job.type}) step {name!r} declares timeout_seconds={limit:g} and "
            f"{max(left, 0.0):.1f} s were left of the tick's budget; this run recorded {new_steps} step(s) and "
            f"{'began on the budget' + chr(39) + 's tail' if late else 'began with time enough for it'}",
            new_steps,
            late,
        )
