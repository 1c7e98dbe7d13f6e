"""The values of one job's run: the Job a handler is told, its decoded payload, and the Outcome of an attempt."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Literal, NamedTuple

from crontick import tracing
from crontick.workflows import children, steps


class Job(NamedTuple):
    """What a handler is told about the job it runs.

    A NamedTuple (immutable, read by attribute), like the tick's other per-job values: a tick
    makes one per job, and a frozen dataclass took four times as long to build.
    """

    id: int
    type: str
    payload: Any
    attempt: int
    max_attempts: int
    created_at: datetime
    # Set on jobs a schedule enqueued: the slot (a UTC instant) it runs for, and the schedule's name.
    scheduled_for: datetime | None = None
    schedule: str | None = None
    snoozes: int = 0  # times this job has snoozed (raise crontick.Snooze) so far
    # Debounce: every payload merged into this job, oldest first (the jobs.payloads column, as the
    # claim returns it); None when it merged nothing. Read it as `payloads`.
    merged_payloads: Any = None
    # The W3C traceparent of the span that enqueued it (kept only while the enqueuing app traced), which its run's
    # span links to (crontick.jobs.job_spans); None when it was enqueued outside a trace.
    traceparent: str | None = None

    @property
    def payloads(self) -> list[Any]:
        """Every payload merged into this job by a debounced enqueue, oldest first (the newest 100 that add
        up to 16 MiB are kept; see crontick.Debounce); `[payload]` for a job that merged nothing. `payload`
        is the newest."""
        merged = self.merged_payloads
        return merged if isinstance(merged, list) else [self.payload]

    # Durable steps (issue 21): the methods a handler calls; crontick.workflows.steps does the work.
    def step(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run `fn(*args, **kwargs)` once for this job and record its JSON result; on every later run of the
        handler (a retry, a rescue, after a sleep or a wait) return the recorded result without calling `fn`.

        `fn` may be sync or async. In an `async def` handler, await it (`await job.step(...)`). The result
        must be JSON (at most crontick.workflows.steps.STEP_RESULT_MAX_BYTES as JSON text) and comes back
        as JSON gives it (a tuple as a list). A step that raises is not recorded: the attempt fails as
        usual. A name may be used once per run. A step whose `fn` finished but whose result was not yet
        recorded (a crash in between) runs again: pass `job.step_key(name)` to the provider.
        """
        children.check_cancel(self)  # crontick.Cancelled once crontick.cancel asked this job to stop
        if tracing.tracer() is None:
            return steps.step(self, name, fn, args, kwargs)
        from crontick.jobs.job_spans import around_step

        return around_step("step", self, name, lambda: steps.step(self, name, fn, args, kwargs))

    def map(self, name: str, fn: Callable[[Any], Any], items: Iterable[Any], /, *, concurrency: int = 1) -> Any:
        """Call `fn(item)` for each item, each a step of its own recorded as `name[i]`, and return the results in
        the items' order (awaited in an `async def` handler). A later run (a retry, a rescue, a yield) resumes at
        the first unrecorded item. Up to `concurrency` items run at once (1 to 100). `fn` may declare its policy
        with @crontick.step, as a step's function does."""
        from crontick.workflows import mapping

        if tracing.tracer() is None:
            return mapping.map_items(self, name, fn, items, concurrency)
        from crontick.jobs.job_spans import around_step

        return mapping.map_items(
            self, name, fn, items, concurrency, lambda item, call: around_step("map", self, item, call)
        )

    def time_left(self) -> float:
        """Seconds left to this run: to its handler's timeout_seconds, else to the end of the tick's budget (0 once
        the budget has stopped it). For a handler that decides for itself whether to start more work."""
        return steps.time_left(self)

    def step_key(self, name: str) -> str:
        """A key for step `name` of this job, the same on every attempt: a provider call's idempotency key."""
        return steps.step_key(self, name)

    def sleep(self, name: str, seconds: float) -> Any:
        """Park the job as pending for `seconds`, spending no attempt and holding no lease; the handler runs again
        then, and this call returns None (awaited in an `async def` handler)."""
        children.check_cancel(self)
        if tracing.tracer() is None:
            return steps.sleep(self, name, seconds)
        from crontick.jobs.job_spans import around_step

        return around_step("sleep", self, name, lambda: steps.sleep(self, name, seconds))

    def wait_for(
        self, name: str, event_key: str, *, timeout_seconds: float, since: datetime | Literal["job"] | None = "job"
    ) -> Any:
        """Park the job as waiting until `crontick.signal(conn, event_key, payload)` commits, then return the
        payload; None once `timeout_seconds` have passed (awaited in an `async def` handler).

        A signal sent while no job waited on the key is kept, and taken by the next wait that begins on it
        if it was sent at or after `since`: by default ("job") this job's creation, so an answer sent before
        the job existed (to an earlier question) is not taken for this one's; a datetime (timezone-aware,
        compared with the database's clock when the signal's transaction began) for a later bound, such as
        when you asked; None for any kept signal. A signal sent while the job waits always wakes it.
        """
        children.check_cancel(self)
        if tracing.tracer() is None:
            return steps.wait_for(self, name, event_key, timeout_seconds, since)
        from crontick.jobs.job_spans import around_step

        return around_step("wait", self, name, lambda: steps.wait_for(self, name, event_key, timeout_seconds, since))

    # Child jobs (issue 36): crontick.workflows.children does the work.
    def spawn(self, name: str, type: str, payloads: Iterable[Any], **enqueue_options: Any) -> Any:
        """Enqueue one job of `type` per payload, once (recorded as step `name`: a retry spawns nothing again), and
        return their ids (awaited in an `async def` handler). Options: run_after, max_attempts, priority, group_key and
        start_by (each child's deadline to start: seconds from now or an aware datetime, as crontick.enqueue's)."""
        children.check_cancel(self)
        return children.spawn(self, name, type, payloads, enqueue_options)

    def join(self, name: str, ids: Sequence[int], *, timeout_seconds: float) -> Any:
        """Park the job `waiting` until every job of `ids` (its children) has ended, then return
        `[{"id", "status", "result"}...]` in the ids' order (awaited in an `async def` handler). `result` is the
        child handler's return value, or None. After `timeout_seconds` of waiting, the children as they are."""
        children.check_cancel(self)
        if tracing.tracer() is None:
            return children.join(self, name, ids, timeout_seconds)
        from crontick.jobs.job_spans import around_step

        return around_step("join", self, name, lambda: children.join(self, name, ids, timeout_seconds))


class Outcome(NamedTuple):
    """How one claimed attempt ended, as the record statement writes it.

    A NamedTuple, like the other values here: a tick makes one per job, and both building one
    and defining the class (at import, so on every cold start) cost a fraction of a frozen
    dataclass's.
    """

    job_id: int
    claimed_attempt: int
    status: str  # done | failed | pending (retry, or released unstarted)
    attempts: int
    run_after: datetime | None = None
    last_error: str | None = None
    snoozed: bool = False  # a snooze: pending again with its attempt handed back, and counted in jobs.snoozes
    traceback: str | None = None  # a failed attempt's, scrubbed and bounded (crontick.text.traceback_of)
    # Durable steps: the job.sleep or job.wait_for that parked it (crontick.workflows.steps.Parked.park).
    park: list[Any] | None = None
    # Workflows that outlive a tick: the job yielded (pending, due at once, its attempt handed back; jobs.yielded).
    yielded: bool = False
    # CRONTICK_SLOW_JOB_SECONDS: the attempt ran at least that long (logged as slow_job; counted per type).
    slow: bool = False
    # How long the attempt ran (ms, from its start to its end on the runner's clock): the per-type durations count it.
    ms: float | None = None


class UndecodablePayload(NamedTuple):
    """A payload Python cannot decode (nested deeper than its recursion limit): its job fails, alone."""

    reason: str


# json.loads without its per-call set-up (most payloads are tiny): the decoder's own scanner.
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def decode_payload(text: str) -> Any:
    try:
        value, end = _scan_json(text, 0)
        if end == len(text):
            return value
        return json.loads(text)  # not one whole JSON value (cannot come from jsonb): json says why
    except StopIteration:
        return json.loads(text)
    except RecursionError:
        return UndecodablePayload(
            f"expected a payload Python can decode, got JSON nested deeper than "
            f"{sys.getrecursionlimit()} levels ({len(text)} characters)"
        )
