"""@crontick.step: a step function's own policy (timeout, retries, at most once), declared where the function is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from crontick.errors import ConfigError

# The most retries one step may declare, and the longest delay between two of them.
MAX_STEP_RETRIES = 100
MAX_RETRY_DELAY_SECONDS = 86400.0
MAX_STEP_TIMEOUT_SECONDS = 86400.0

F = TypeVar("F", bound=Callable[..., Any])
ATTRIBUTE = "__crontick_step__"


class StepPolicy(NamedTuple):
    timeout_seconds: float | None = None  # started only when what is left of the tick's budget covers it
    retries: int = 0  # tried again this many more times, spending no job attempt
    retry_delay_seconds: float = 0.0
    at_most_once: bool = False  # its start recorded before it is called; never called twice


NO_POLICY = StepPolicy()


def step(
    *,
    timeout_seconds: float | None = None,
    retries: int = 0,
    retry_delay_seconds: float = 0.0,
    at_most_once: bool = False,
) -> Callable[[F], F]:
    """Declare a step function's policy: `@crontick.step(timeout_seconds=20, retries=3)`; job.step and job.map read it.

    `timeout_seconds`: the step starts only when what is left of the tick's budget covers it (else its job yields
    to a later tick). `retries`, `retry_delay_seconds`: a step that raises is called again up to `retries` more
    times, `retry_delay_seconds` apart, spending no job attempt. `at_most_once`: the step's start is recorded
    before it is called, and a later run that finds it started but not finished fails the job (outcome unknown).
    """
    if timeout_seconds is not None and (
        isinstance(timeout_seconds, bool)
        or not isinstance(timeout_seconds, (int, float))
        or not 0 < timeout_seconds <= MAX_STEP_TIMEOUT_SECONDS
    ):
        raise ConfigError(
            f"@crontick.step: expected timeout_seconds above 0 and at most {MAX_STEP_TIMEOUT_SECONDS:g}, got {timeout_seconds!r}"
        )
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_STEP_RETRIES:
        raise ConfigError(
            f"@crontick.step: expected retries as an integer from 0 to {MAX_STEP_RETRIES}, got {retries!r}"
        )
    if (
        isinstance(retry_delay_seconds, bool)
        or not isinstance(retry_delay_seconds, (int, float))
        or not 0 <= retry_delay_seconds <= MAX_RETRY_DELAY_SECONDS
    ):
        raise ConfigError(
            f"@crontick.step: expected retry_delay_seconds from 0 to {MAX_RETRY_DELAY_SECONDS:g}, got {retry_delay_seconds!r}"
        )
    if not isinstance(at_most_once, bool):
        raise ConfigError(f"@crontick.step: expected at_most_once as True or False, got {at_most_once!r}")
    policy = StepPolicy(
        None if timeout_seconds is None else float(timeout_seconds), retries, float(retry_delay_seconds), at_most_once
    )

    def declare(fn: F) -> F:
        if not callable(fn):
            raise ConfigError(f"@crontick.step: expected a function, got {fn!r}")
        setattr(fn, ATTRIBUTE, policy)
        return fn

    return declare


def policy_of(fn: Callable[..., Any]) -> StepPolicy:
    """The policy @crontick.step declared on `fn`, else none."""
    found = getattr(fn, ATTRIBUTE, None)
    return found if isinstance(found, StepPolicy) else NO_POLICY
