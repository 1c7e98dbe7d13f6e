"""How a step's function is called, under its @crontick.step policy (crontick.workflows.policy), and the JSON it records."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Protocol

from crontick.errors import PermanentError, StepError
from crontick.logs import RunningJob
from crontick.text import json_problem
from crontick.workflows.budget import RunBudget
from crontick.workflows.parked import Parked
from crontick.workflows.policy import StepPolicy, policy_of

# The most a step's result may take as JSON text (UTF-8 bytes). Keep big things (documents,
# audio) in your own storage and return their key.
STEP_RESULT_MAX_BYTES = 64 * 1024
# What json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")) makes anew on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# Values JSON gives back as they went in (a float: finite, since NaN and infinities are refused): a step returns them
# without decoding its own text again. Exact types: a subclass (an IntEnum, say) comes back as its base.
_SAME_AFTER_JSON = frozenset((str, int, float, bool, type(None)))


def encoded(job: RunningJob, name: str, value: Any) -> str:
    """The step's result as JSON text, or a StepError naming the step."""
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StepError(
            f"job {job.id} ({job.type}) step {name!r}: expected a JSON result (dict, list, str, number, bool or "
            f"None), got {type(value).__name__}: {exc}"
        ) from None
    # Refused before anything is written: the result would go with other jobs' steps (group commit), and one that
    # jsonb refuses would fail that statement for all of them.
    if problem := json_problem(text):
        raise StepError(f"job {job.id} ({job.type}) step {name!r}: {problem}")
    # At most 4 bytes a character: the text is encoded only when it might be over.
    size = len(text) if len(text) * 4 <= STEP_RESULT_MAX_BYTES else len(text.encode())
    if size > STEP_RESULT_MAX_BYTES:
        raise StepError(
            f"job {job.id} ({job.type}) step {name!r}: expected a result of at most {STEP_RESULT_MAX_BYTES} bytes "
            f"of JSON (crontick.workflows.steps.STEP_RESULT_MAX_BYTES), got {size}; store it elsewhere and return its key"
        )
    return text


def decoded(value: Any, text: str) -> Any:
    """What a step whose function returned `value`, recorded as `text`, returns: as a later run gets it (a tuple
    comes back a list either way)."""
    return value if type(value) in _SAME_AFTER_JSON else json.loads(text)


class OutcomeUnknown(PermanentError):
    """An at_most_once step an earlier run started and never recorded: not called again; its job fails (alerted)."""


class Calls(Protocol):
    """What calling a step needs of its batch (crontick.workflows.steps.StepBatch)."""

    budget: RunBudget

    async def record(self, job: Any, name: str, text: str) -> None: ...

    def blocking(self, work: Coroutine[Any, Any, Any]) -> Any: ...

    def record_in_thread(self, job: Any, name: str, text: str) -> None: ...


# The marker an at_most_once step records before its function is called (one per try), and the sleep that parks
# a step retry longer than what is left of the budget: names no step of the handler's own should take.
STARTED = "{name}#started{try_}"
RETRY = "{name}#retry{try_}"


async def call(
    batch: Calls, job: Any, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
    recorded: Mapping[str, object],
) -> Any:  # fmt: skip
    """In an async handler: fn's value, under its @crontick.step policy (fits the budget, at most once, retries)."""
    policy = policy_of(fn)
    try_ = _retries_used(name, recorded)
    while True:
        batch.budget.check_running(job, name)
        batch.budget.check_fits(job, name, policy)
        if policy.at_most_once:
            _not_started_before(job, name, try_, recorded)
            await batch.record(job, STARTED.format(name=name, try_=try_), "true")
        try:
            value = fn(*args, **kwargs)
            return (await value) if inspect.isawaitable(value) else value
        except Exception as exc:
            delay = _retry_delay(batch, job, name, policy, try_, exc)
        try_ += 1
        await asyncio.sleep(delay)


def call_in_thread(
    batch: Calls, job: Any, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
    recorded: Mapping[str, object],
) -> Any:  # fmt: skip
    """In a sync handler's thread: as call(), fn called in this thread (an async fn on the tick's loop)."""
    policy = policy_of(fn)
    try_ = _retries_used(name, recorded)
    while True:
        batch.budget.check_running(job, name)
        batch.budget.check_fits(job, name, policy)
        if policy.at_most_once:
            _not_started_before(job, name, try_, recorded)
            batch.record_in_thread(job, STARTED.format(name=name, try_=try_), "true")
        try:
            value = fn(*args, **kwargs)
            return batch.blocking(_awaited(value)) if inspect.isawaitable(value) else value
        except Exception as exc:
            delay = _retry_delay(batch, job, name, policy, try_, exc)
        try_ += 1
        time.sleep(delay)


def _retries_used(name: str, recorded: Mapping[str, object]) -> int:
    """How many retries of step `name` earlier runs began: each one that waited past a tick recorded its park."""
    try_ = 0
    while RETRY.format(name=name, try_=try_ + 1) in recorded:
        try_ += 1
    return try_


def _not_started_before(job: RunningJob, name: str, try_: int, recorded: Mapping[str, object]) -> None:
    """An at_most_once step found started by an earlier run, its outcome unrecorded: the job fails, saying so."""
    if STARTED.format(name=name, try_=try_) in recorded:
        raise OutcomeUnknown(
            f"job {job.id} ({job.type}) step {name!r} (at_most_once) was started by an earlier run and "
            "its outcome was never recorded (the process was killed, or the tick's budget cut it, while it ran): it is "
            f"not called again; check with the provider whether it happened (its key: job.step_key({name!r}))"
        )


def _retry_delay(batch: Calls, job: RunningJob, name: str, policy: StepPolicy, try_: int, exc: Exception) -> float:
    """The step raised `exc` on try `try_`: the seconds to wait before the next try (within the budget), or a park
    (a delay longer than what is left), or `exc` again once the step's retries are spent (the attempt fails)."""
    if try_ >= policy.retries or isinstance(exc, PermanentError):
        raise exc
    delay = policy.retry_delay_seconds
    if delay + (policy.timeout_seconds or 0.0) <= batch.budget.time_left(job):
        return delay
    raise Parked(RETRY.format(name=name, try_=try_ + 1), "sleep", delay) from exc


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value
