"""Child jobs and cancel inside a running handler: job.spawn, job.join, a handler's result, and crontick.Cancelled.

- job.spawn(name, type, payloads) enqueues one child per payload and records the spawn as the
  parent's step `name` in the same call (sql/functions/job_spawn.sql): a retry, a rescue or a
  resume spawns nothing again and gets the same ids. `start_by=` gives each child a deadline to
  start, as enqueue's does (a child not started by then ends `cancelled`, which its join reports).
- job.join(name, ids, timeout_seconds=...) reads the children; while one has not ended, it parks
  the parent in a job.wait_for on the key 'crontick.join:<parent id>', which the last child to
  end signals (sql/functions/job_child_ended.sql, a trigger), so no tick polls. Every wake reads
  the children again (a wait named `name#0`, `name#1`, ... each time), and once all have ended
  their statuses and results are recorded as the step `name`. timeout_seconds bounds the whole
  join: every wait after the first ends when the first would have (its wait_until).
- A handler's return value (not None) is recorded as its job's step 'crontick:result' (JSON, at
  most crontick.workflows.steps.STEP_RESULT_MAX_BYTES), which job.join returns as `result`.
- check_cancel: job.step, job.sleep and job.wait_for raise crontick.Cancelled once crontick.cancel
  asked the job to stop. Which jobs were asked is read for the whole batch in one statement, at
  most every CANCEL_CHECK_SECONDS (a sync handler's step waits for that read; an async one's
  starts it and goes on, so its next step sees it).
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from crontick import logs, tracing
from crontick.db import query
from crontick.errors import Cancelled, CrontickError, StepError, StepFenced
from crontick.text import json_problem, start_by_params, text_problem, type_problem
from crontick.workflows import calls, steps
from crontick.workflows.steps import Recorded, StepBatch

if TYPE_CHECKING:
    from crontick.workflows.steps import StepJob as Job

CANCEL_CHECK_SECONDS = 0.5
RESULT_STEP = "crontick:result"
JOIN_KEY_PREFIX = "crontick.join:"
ENDED = ("done", "failed", "cancelled")
# How many times one job.join may wake and find a child still running before it gives up waiting (each wake
# is a signal: the last child's end, or a stale one kept from an earlier join of the same parent).
MAX_JOIN_WAKES = 100
SPAWN_OPTIONS = ("run_after", "max_attempts", "priority", "group_key", "start_by")


class _Watch:
    """Which of a batch's jobs were asked to stop, as last read, and when."""

    def __init__(self) -> None:
        self.read_at = float("-inf")
        self.asked: frozenset[int] = frozenset()
        self.reading = False


_WATCHES: weakref.WeakKeyDictionary[StepBatch, _Watch] = weakref.WeakKeyDictionary()


def check_cancel(job: Job) -> None:
    """Raise crontick.Cancelled when crontick.cancel asked `job` to stop (as last read for its batch)."""
    batch = steps.current_batch()
    if batch is None:
        return  # outside a tick: the step itself says so
    if batch.budget.time_left(job) <= 0:
        return  # the budget stopped it (its thread may run on past the batch): the step itself refuses
    watch = _WATCHES.get(batch)
    if watch is None:
        watch = _WATCHES[batch] = _Watch()
    if not watch.reading and time.monotonic() - watch.read_at >= CANCEL_CHECK_SECONDS:
        watch.reading = True
        if steps.on_loop():
            batch.loop.create_task(_read(batch, watch))
        else:
            batch.blocking(_read(batch, watch))
    if job.id in watch.asked:
        raise Cancelled(f"job {job.id} ({job.type}) was cancelled (crontick.cancel) while it ran")


async def _read(batch: StepBatch, watch: _Watch) -> None:
    try:
        ids = "{" + ",".join(str(j.id) for j in batch.jobs) + "}"
        cur = await batch.conn.execute(query("job_cancel_requested"), {"ids": ids})
        watch.asked = frozenset(row[0] for row in await cur.fetchall())
        watch.read_at = time.monotonic()
    finally:
        watch.reading = False


def spawn(job: Job, name: str, type: str, payloads: Iterable[Any], options: dict[str, Any]) -> Any:
    """job.spawn: the children's ids, enqueued and recorded once (awaitable in an async handler)."""
    batch = steps.batch_of(job, "job.spawn")
    batch.use_name(job, name, "job.spawn")
    params = _spawn_params(job, name, type, list(payloads), options)
    if steps.on_loop():
        return _spawn(batch, job, name, params)
    return batch.blocking(_spawn(batch, job, name, params))


def _spawn_params(job: Job, name: str, type: str, payloads: list[Any], options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(SPAWN_OPTIONS)
    if unknown:
        raise StepError(
            f"job {job.id} ({job.type}) job.spawn({name!r}): expected options among {', '.join(SPAWN_OPTIONS)}, "
            f"got {', '.join(sorted(unknown))}"
        )
    where = f"job {job.id} ({job.type}) job.spawn({name!r})"
    if not isinstance(type, str) or not type or (problem := type_problem(type)):
        raise StepError(f"{where}: expected a job type, got {type!r:.200}")
    if problem := text_problem("group_key", options.get("group_key")):
        raise StepError(f"{where}: {problem}")
    try:  # each child's deadline to start, as enqueue's start_by (a datetime, or seconds from now)
        deadline = start_by_params(where, options.get("start_by"), options.get("run_after"))
    except CrontickError as exc:
        raise StepError(str(exc)) from None
    rows = [
        {"payload": _payload(where, i, payload_of(f"{where}: payload {i}", type, payload))}
        for i, payload in enumerate(payloads)
    ]
    priority, max_attempts = declared(type)
    return {
        "parent": job.id,
        "attempt": job.attempt,
        "name": name,
        "types": [type] * len(rows),
        "payloads": [r["payload"] for r in rows],
        "run_after": options.get("run_after"),
        "max_attempts": options.get("max_attempts", max_attempts),
        "priority": options.get("priority", priority),
        "group_key": options.get("group_key"),
        "traceparent": tracing.traceparent(),  # the parent's span while the app traces: each child's span links to it
        **deadline,
    }


def _payload(where: str, i: int, payload: Any) -> Jsonb:
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise StepError(f"{where}: payload {i}: expected JSON, got {type(payload).__name__}: {exc}") from None
    if problem := json_problem(text):
        raise StepError(f"{where}: payload {i}: {problem}")
    return Jsonb(payload, dumps=lambda _: text)


def _no_declarations(type: str) -> tuple[int | None, int | None]:
    return None, None


def _as_given(where: str, type: str, payload: Any) -> Any:
    return payload


# A child's payload checked against its type's pydantic model (crontick.jobs.payloads), as JSON: crontick.jobs.registry
# puts its own here when it is imported, as it does `declared`.
payload_of: Callable[[str, str, Any], Any] = _as_given

# (priority, max_attempts) the handler of a type declares: crontick.jobs.registry puts its own lookup here when it is
# imported (it is, before any handler runs); a child's options win over it.
declared: Callable[[str], tuple[int | None, int | None]] = _no_declarations


async def _spawn(batch: StepBatch, job: Job, name: str, params: dict[str, Any]) -> list[int]:
    cur = await batch.conn.execute(query("job_spawn"), params)
    row = await cur.fetchone()
    if row is None:
        raise StepFenced(
            f"job {job.id} ({job.type}) job.spawn({name!r}): expected the job still running attempt {job.attempt}, "
            "got it taken over (its lease ended and another tick rescued it); nothing spawned"
        )
    return [int(i) for i in row[0]]


def join(job: Job, name: str, ids: Sequence[int], timeout_seconds: float) -> Any:
    """job.join: [{"id", "status", "result"}...] in the ids' order once every child has ended (awaitable in an
    async handler); parks the job until then."""
    ids = _ids(job, name, ids)
    if steps.on_loop():
        return _join(job, name, ids, timeout_seconds)
    batch = steps.batch_of(job, "job.join")
    recorded = batch.blocking(batch.recorded(job))
    if name in recorded:
        return steps.replayed(job, name, recorded[name])
    deadline = _deadline(recorded, name)
    for n in range(MAX_JOIN_WAKES):
        children = batch.blocking(_children(batch, job, name, ids))
        if all(c["status"] in ENDED for c in children):
            break
        if (
            steps.wait_for(job, f"{name}#{n}", JOIN_KEY_PREFIX + str(job.id), timeout_seconds, deadline=deadline)
            is None
        ):
            break  # timed out: the children as they are
    return steps.step(job, name, lambda: children, (), {})


async def _join(job: Job, name: str, ids: list[int], timeout_seconds: float) -> Any:
    batch = steps.batch_of(job, "job.join")
    recorded = await batch.recorded(job)
    if name in recorded:
        return steps.replayed(job, name, recorded[name])
    deadline = _deadline(recorded, name)
    for n in range(MAX_JOIN_WAKES):
        children = await _children(batch, job, name, ids)
        if all(c["status"] in ENDED for c in children):
            break
        if (
            await steps.wait_for(job, f"{name}#{n}", JOIN_KEY_PREFIX + str(job.id), timeout_seconds, deadline=deadline)
            is None
        ):
            break
    return await steps.step(job, name, lambda: children, (), {})


def _deadline(recorded: dict[str, Recorded], name: str) -> datetime | None:
    """When the join's first wait ends (None before it began): every later wake waits only until then, so
    timeout_seconds bounds the whole join, not each wait."""
    first = recorded.get(f"{name}#0")
    return None if first is None else first.until


def _ids(job: Job, name: str, ids: Sequence[int]) -> list[int]:
    checked = list(ids) if not isinstance(ids, str | bytes) else None
    if checked is None or any(isinstance(i, bool) or not isinstance(i, int) for i in checked):
        raise StepError(f"job {job.id} ({job.type}) job.join({name!r}): expected a list of job ids, got {ids!r:.200}")
    return checked


async def _children(batch: StepBatch, job: Job, name: str, ids: list[int]) -> list[dict[str, Any]]:
    cur = await batch.conn.execute(query("job_children"), {"ids": ids})
    rows = await cur.fetchall()
    strangers = [i for i, (child, parent, _, _) in zip(ids, rows, strict=True) if child is None or parent != job.id]
    if strangers:
        raise StepError(
            f"job {job.id} ({job.type}) job.join({name!r}): expected ids of this job's children (job.spawn), got "
            f"{', '.join(map(str, strangers[:10]))}, which are not"
        )
    return [{"id": i, "status": status, "result": None if r is None else json.loads(r)} for i, _, status, r in rows]


def keep_result(job: Job, value: Any) -> Any:
    """A handler's return value, recorded as its job's result (job.join returns it): awaitable on the loop, done in
    a sync handler's thread. One that is not JSON or is too big is left out, with a warning: returning a value
    never fails a job (handlers written before results existed return whatever they like)."""
    batch = steps.current_batch()
    if batch is None:
        return _nothing() if steps.on_loop() else None
    try:
        text = calls.encoded(job, RESULT_STEP, value)
    except StepError as exc:
        logs.warning("job_result_not_kept", job_id=job.id, type=job.type, error=str(exc)[:300])
        return _nothing() if steps.on_loop() else None
    if steps.on_loop():
        return batch.record(job, RESULT_STEP, text)
    return batch.blocking(batch.record(job, RESULT_STEP, text))


async def _nothing() -> None:
    return None
