"""A batch's durable steps: each finished step recorded once, before the next runs; a later run returns it instead.

How it talks to the database. The runner opens one StepBatch per batch, on the tick's own
connection (autocommit, no prepared statement: the same connection model as every other tick
statement, so it works behind a transaction pooler), and no transaction is ever held across a
step's function. A batch whose handlers call no step sends nothing: the statements below are
sent only once a handler asks.
- Loading: the first job.step, job.sleep or job.wait_for of a job loads the recorded steps of
  every job in the batch of that job's type, in one statement (sql/workflows.sql job_steps_load),
  shared by the jobs that ask meanwhile.
- Recording: a finished step's JSON result is written, fenced on the attempt the tick claimed,
  before job.step returns. Steps that finish while a write is on the wire go together in the next
  one (group commit, sql/workflows.sql job_steps_record; crontick.workflows.commit): one statement
  per finished step at most, far fewer when many jobs run at once, from async handlers and sync
  handlers' threads alike.
- Parking: job.sleep and job.wait_for raise Parked out of the handler; the runner turns it into
  the job's outcome, and the batch's one record statement writes the sleep or wait as a step with
  it (sql/functions/job_record_outcomes.sql).

What is and is not exactly-once: a step whose function finished but whose result was not
recorded yet (the process killed in between, the write lost) runs again on the next attempt.
job.step_key gives the provider a key to drop that duplicate.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from contextvars import ContextVar, Token
from datetime import datetime
from typing import Any, NamedTuple, Protocol, TypeVar

import psycopg

from crontick.db import query
from crontick.errors import CrontickError, StepError, StepFenced
from crontick.logs import RunningJob
from crontick.text import fit_key, text_problem
from crontick.workflows import calls
from crontick.workflows.budget import RunBudget
from crontick.workflows.calls import STEP_RESULT_MAX_BYTES as STEP_RESULT_MAX_BYTES  # its documented name
from crontick.workflows.commit import GroupCommit
from crontick.workflows.parked import Parked as Parked  # its name for crontick.jobs and the tests

T = TypeVar("T")

STEP_NAME_MAX_CHARS = 200
# The longest one job.sleep or one job.wait_for may park a job.
MAX_PARK_SECONDS = 365 * 86400
# How long a signal sent before any job waits on its key is kept for the wait that begins on it
# (sql/functions/job_begin_waits.sql; the retention run deletes older ones).
SIGNAL_KEEP_DAYS = 7
# job.wait_for's default `since`: a kept signal counts only when sent at or after the waiting job was
# created; one sent before cannot answer this job's question (a previous survey's reply, say).
SINCE_JOB = "job"


class StepJob(RunningJob, Protocol):
    """What a step needs of its job (crontick.jobs.job.Job): what a log line names, and when it was created."""

    @property
    def created_at(self) -> datetime: ...


class Recorded(NamedTuple):
    """One row of job_steps, as a later run of the handler reads it."""

    kind: str  # step | sleep | wait
    status: str  # done | waiting | signalled | timed_out
    result: str | None  # JSON text
    until: datetime | None = None  # a wait's end (its timeout), else None


def step_key(job: StepJob, name: str) -> str:
    """A key for step `name` of `job`, the same on every attempt, for a provider's idempotency key.

    `crontick-<job id>-<24 hex digits>`: the digits hash the job's id, its creation time and the
    step's name, so two databases (staging and production on one provider account) whose job ids
    meet do not share keys. 46 characters at most for ids below 10^15: within Stripe's 255 and
    every provider's limit we know of.
    """
    _check_name(job, name, "job.step_key")
    digest = hashlib.sha256(f"{job.id}\x00{job.created_at.isoformat()}\x00{name}".encode()).hexdigest()[:24]
    return f"crontick-{job.id}-{digest}"


_BATCH: ContextVar[StepBatch | None] = ContextVar("crontick_step_batch", default=None)


def begin(
    conn: psycopg.AsyncConnection[Any],
    jobs: Sequence[StepJob],
    clock: Callable[[], float] = time.monotonic,
    deadline: float = float("inf"),
    budget_seconds: float = float("inf"),
) -> StepBatch:
    """The runner, before a batch runs: its handlers' steps use `conn` (the tick's), and the budget ends at
    `deadline` (a `clock()` time) of a whole `budget_seconds`. Pass the batch to end() after."""
    batch = StepBatch(conn, jobs, clock, deadline, budget_seconds)
    batch.token = _BATCH.set(batch)
    return batch


def end(batch: StepBatch) -> None:
    if batch.token is not None:
        _BATCH.reset(batch.token)


def thread_left() -> None:
    """This thread runs no more of the batch's steps (a sync handler's thread, a job.map worker, at their end): no
    group commit waits for its next write."""
    batch = _BATCH.get()
    if batch is not None:
        batch.commit.left()


def time_left(job: StepJob) -> float:
    """job.time_left: seconds left to this run (its timeout's end, else the budget's); 0 once the budget stopped it."""
    return batch_of(job, "job.time_left").budget.time_left(job)


def step(job: StepJob, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """job.step: the recorded result of step `name`, else fn's, recorded (awaitable in an async handler)."""
    batch = batch_of(job, "job.step")
    if not callable(fn):
        raise StepError(f"job {job.id} ({job.type}) step {name!r}: expected a function to call, got {fn!r}")
    batch.use_name(job, name)
    if on_loop():
        return batch.step(job, name, fn, args, kwargs)
    return batch.step_in_thread(job, name, fn, args, kwargs)


def sleep(job: StepJob, name: str, seconds: float) -> Any:
    """job.sleep: park the job for `seconds` the first time; nothing once it has slept."""
    return _park(job, Parked(name, "sleep", _seconds(job, name, seconds, "job.sleep")))


def wait_for(
    job: StepJob,
    name: str,
    event_key: str,
    timeout_seconds: float,
    since: Any = SINCE_JOB,
    deadline: datetime | None = None,
) -> Any:
    """job.wait_for: park the job until a signal on `event_key` or the timeout; then the payload, or None.

    A signal kept from before the wait began counts only when it was sent at or after `since` (crontick.Job.wait_for
    says which values it takes). `deadline`: the wait times out then instead of `timeout_seconds` after it begins
    (job.join's later waits end with its first)."""
    if not isinstance(event_key, str) or not event_key:
        raise StepError(
            f"job {job.id} ({job.type}) job.wait_for({name!r}): expected a non-empty event key, got {event_key!r}"
        )
    # Refused here, not fitted: the key goes into the statement that records the whole batch's outcomes.
    if problem := text_problem("an event key", event_key, None):
        raise StepError(f"job {job.id} ({job.type}) job.wait_for({name!r}): {problem}")
    seconds = _seconds(job, name, timeout_seconds, "job.wait_for timeout_seconds")
    # The key is indexed (job_steps_waiting): one over the bound becomes its stable digest, as crontick.signal's does.
    return _park(job, Parked(name, "wait", seconds, fit_key(event_key), _since(job, name, since), deadline))


def _since(job: StepJob, name: str, since: Any) -> datetime | None:
    if since == SINCE_JOB:
        return job.created_at
    if since is None or (isinstance(since, datetime) and since.tzinfo is not None):
        return since
    raise StepError(
        f"job {job.id} ({job.type}) job.wait_for({name!r}): expected since={SINCE_JOB!r}, None or a timezone-aware "
        f"datetime, got {since!r}"
    )


def _park(job: StepJob, parked: Parked) -> Any:
    what = f"job.{'sleep' if parked.kind == 'sleep' else 'wait_for'}"
    batch = batch_of(job, what)
    batch.use_name(job, parked.name, what)
    if on_loop():
        return batch.resume(job, parked)
    return batch.blocking(batch.resume(job, parked))


class StepBatch:
    """The steps of one batch's jobs: what each has recorded (loaded on first use), the names each run used,
    and the writes waiting for the next group commit."""

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        jobs: Sequence[StepJob],
        clock: Callable[[], float] = time.monotonic,
        deadline: float = float("inf"),
        budget_seconds: float = float("inf"),
    ) -> None:
        self.conn = conn
        self.jobs = jobs
        self.token: Token[StepBatch | None] | None = None
        self.budget = RunBudget(clock, deadline, budget_seconds)  # job.time_left, yields, cut handlers
        self.loop = asyncio.get_running_loop()
        self._lock = threading.Lock()  # sync handlers' threads add names; the rest happens on the loop
        self._names: dict[int, set[str]] = {}
        self._recorded: dict[int, dict[str, Recorded]] = {}
        self._loads: dict[str, asyncio.Task[dict[int, dict[str, Recorded]]]] = {}
        self._loaded: dict[str, dict[int, dict[str, Recorded]]] = {}  # the loads done, for threads to read
        self._thread_loads: dict[str, threading.Event] = {}  # set once a type's load, asked by a thread, ended
        self.commit = GroupCommit(conn, self.loop, self.budget.recorded)

    def use_name(self, job: StepJob, name: str, what: str = "job.step") -> None:
        """Claim `name` for this run of `job`'s handler; a second use is a StepError, not a silent reuse."""
        _check_name(job, name, what)
        with self._lock:
            names = self._names.setdefault(job.id, set())
            if name in names:
                raise StepError(
                    f"job {job.id} ({job.type}): expected each step name once per run, got {name!r} twice "
                    "(give each step, sleep and wait its own name)"
                )
            names.add(name)

    def blocking(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the tick's loop from a sync handler's thread, and wait for it."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()

    async def step(
        self, job: StepJob, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """In an async handler: the recorded result, else fn's (awaited when it is async), recorded."""
        recorded = await self.recorded(job)
        hit = recorded.get(name)
        if hit is not None:
            return replayed(job, name, hit)
        began = self.budget.clock()
        value = await calls.call(self, job, name, fn, args, kwargs, recorded)
        text = calls.encoded(job, name, value)
        await self.record(job, name, text, self.budget.clock() - began)
        return calls.decoded(value, text)

    def step_in_thread(
        self, job: StepJob, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """In a sync handler's thread: as step(), fn called in this thread (an async fn on the tick's loop), the
        database reached through the loop."""
        self.budget.check_running(job, name)
        # Loaded once per batch and type: once it is, the thread reads it here, without a hop to the loop (a def
        # workflow's steps then wait on the loop only for their record).
        recorded = self.recorded_in_thread(job)
        hit = recorded.get(name)
        if hit is not None:
            return replayed(job, name, hit)
        began = self.budget.clock()
        value = calls.call_in_thread(self, job, name, fn, args, kwargs, recorded)
        text = calls.encoded(job, name, value)
        self.budget.check_running(job, name)  # stopped while fn ran: its result is not recorded
        self.record_in_thread(job, name, text, self.budget.clock() - began)
        return calls.decoded(value, text)

    async def resume(self, job: StepJob, parked: Parked) -> Any:
        """A sleep or wait: Parked the first time; after it, None (a sleep, a timed-out wait) or the signal's payload."""
        hit = (await self.recorded(job)).get(parked.name)
        if hit is None:
            raise parked
        if hit.kind != parked.kind:
            raise StepError(
                f"job {job.id} ({job.type}): {parked.name!r} is a {hit.kind}'s name, used for a {parked.kind}"
            )
        if hit.kind == "wait" and hit.status == "signalled" and hit.result is not None:
            return json.loads(hit.result)
        return None

    def recorded_in_thread(self, job: StepJob) -> dict[str, Recorded]:
        """recorded() in a sync handler's thread: the first thread of a type asks the loop for the load, the others
        wait on an Event (a task and a future chain each cost the loop more than the load, for 100 quick jobs)."""
        found = self.recorded_now(job)
        if found is not None:
            return found
        with self._lock:
            loading = self._thread_loads.get(job.type)
            if first := loading is None:
                loading = self._thread_loads[job.type] = threading.Event()
        if first:
            try:
                return self.blocking(self.recorded(job))
            finally:
                loading.set()
        loading.wait()
        found = self.recorded_now(job)
        # None: the load failed; this thread's own try raises its error, as the first thread's did.
        return found if found is not None else self.blocking(self.recorded(job))

    def recorded_now(self, job: StepJob) -> dict[str, Recorded] | None:
        """What recorded() returns, read in any thread once its type's load is done; None before."""
        found = self._recorded.get(job.id)
        if found is not None:
            return found
        loaded = self._loaded.get(job.type)
        return None if loaded is None else self._recorded.setdefault(job.id, loaded.get(job.id, {}))

    async def recorded(self, job: StepJob) -> dict[str, Recorded]:
        """The steps `job` recorded in earlier runs: loaded with those of its batch's jobs of the same type."""
        found = self._recorded.get(job.id)
        if found is not None:
            return found
        load = self._loads.get(job.type)
        if load is None:
            load = self._loads[job.type] = self.loop.create_task(self._load(job.type))
        loaded = await asyncio.shield(
            load
        )  # one caller cancelled (a handler's timeout) must not cancel the others' load
        return self._recorded.setdefault(job.id, loaded.get(job.id, {}))

    async def _load(self, type: str) -> dict[int, dict[str, Recorded]]:
        ids = "{" + ",".join(str(j.id) for j in self.jobs if j.type == type) + "}"
        cur = await self.conn.execute(query("job_steps_load"), {"ids": ids})
        found: dict[int, dict[str, Recorded]] = {}
        for job_id, name, kind, status, result, until in await cur.fetchall():
            found.setdefault(job_id, {})[name] = Recorded(kind, status, result, until)
        self._loaded[type] = found
        return found

    async def record(self, job: StepJob, name: str, text: str, seconds: float | None = None) -> None:
        """Write one finished step, in the next group commit, and return once it is committed. `seconds`: how long
        a job.step's function ran (its calls, retries included), for crontick_step_duration_seconds_last_hour; None
        for crontick's own rows (a call's start mark, a job's result)."""
        # Not shielded (a hop through the loop per step): the future is this write's own; the round skips it cancelled.
        done = self.commit.queue(job.id, job.attempt, name, text, seconds)
        _written_or_fenced(await done, job, name)

    def record_in_thread(self, job: StepJob, name: str, text: str, seconds: float | None = None) -> None:
        """record() from a sync handler's thread: queued without a hop to the loop, waited for in the thread."""
        _written_or_fenced(self.commit.write_in_thread(job.id, job.attempt, name, text, seconds), job, name)


def _written_or_fenced(written: bool, job: StepJob, name: str) -> None:
    if not written:
        raise StepFenced(
            f"job {job.id} ({job.type}) step {name!r}: expected the job still running attempt {job.attempt} to "
            "record the step, got it taken over (its lease ended and another tick rescued it); not recorded"
        )


def batch_of(job: StepJob, what: str) -> StepBatch:
    """The running batch `job`'s handler records on, for `what` (job.step, job.spawn, ...); outside a tick, a
    CrontickError saying so."""
    batch = _BATCH.get()
    if batch is None:
        raise CrontickError(
            f"job {job.id} ({job.type}): expected {what} inside a handler run by a tick (it records on the tick's "
            "connection), got a call outside one"
        )
    return batch


def claim_name(job: StepJob, name: str, what: str) -> None:
    """Claim `name` for this run of `job`'s handler (job.map's own name), as a step's is."""
    batch_of(job, what).use_name(job, name, what)


def current_batch() -> StepBatch | None:
    """The batch whose handlers run in this context (the tick's loop or a sync handler's thread), else None."""
    return _BATCH.get()


def on_loop() -> bool:
    """Whether the caller runs on an event loop (an async handler), not in a sync handler's thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def replayed(job: StepJob, name: str, hit: Recorded) -> Any:
    """A step recorded by an earlier run: its result, decoded."""
    if hit.kind != "step":
        raise StepError(f"job {job.id} ({job.type}): {name!r} is a {hit.kind}'s name, called as a step")
    return None if hit.result is None else json.loads(hit.result)


def _check_name(job: StepJob, name: Any, what: str) -> None:
    if not isinstance(name, str) or not name or len(name) > STEP_NAME_MAX_CHARS:
        raise StepError(
            f"job {job.id} ({job.type}) {what}: expected a name of 1 to {STEP_NAME_MAX_CHARS} characters, "
            f"got {name!r:.80}"
        )
    # A step's name is written with other jobs' steps (group commit), a sleep's or a wait's with the whole batch's
    # outcomes: one PostgreSQL cannot store would fail those statements for every job in them.
    if problem := text_problem("a name", name, None):
        raise StepError(f"job {job.id} ({job.type}) {what}: {problem}")


def _seconds(job: StepJob, name: str, seconds: Any, what: str) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_PARK_SECONDS:
        raise StepError(
            f"job {job.id} ({job.type}) {what} {name!r}: expected seconds between 0 and {MAX_PARK_SECONDS}, got {seconds!r}"
        )
    return float(seconds)
