"""What an attempt's end makes of its job: done, retried, failed, snoozed, throttled, parked or put back.

A pure function of the job, how its handler call ended and when (no clock, no database, no registry):
crontick.jobs.runner says how each call ended and records what decide() returns.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from crontick import retry
from crontick.jobs.job import Job, Outcome
from crontick.text import TRACEBACK_MAX_CHARS, scrub, storable
from crontick.workflows.parked import Parked

# How soon a job of a type this process does not know is claimed again (by whichever process comes next).
UNKNOWN_TYPE_RECHECK_SECONDS = 60.0
# How many times one job may snooze (raise crontick.Snooze); after that a snooze counts as a failed attempt.
MAX_SNOOZES = 100


class Ended(NamedTuple):
    """How one handler call ended: error None is success; a snooze asks to run again later, uncounted."""

    error: str | None = None
    permanent: bool = False
    retry_after_seconds: float | None = None
    snooze_seconds: float | None = None
    traceback: str | None = None  # of the exception the handler raised, as Python prints it
    unknown_type: bool = False  # no handler for the job's type in this process (another deployment may know it)
    throttle: retry.Throttle | None = None  # the exception carried a provider's 429 or 503 (retry.throttle_of)
    parked: Parked | None = None  # durable steps: job.sleep or job.wait_for parked the job
    # Workflows that outlive a tick: the tick's budget stopped the handler; a step declared with timeout_seconds did
    # not fit what was left of it (started_late: it did not fit when this run began either); the steps this run recorded.
    budget_stopped: bool = False
    deferred: bool = False
    started_late: bool = False
    new_steps: int = 0


SUCCEEDED = Ended()  # one value for every success: the common case builds nothing


class Rules(NamedTuple):
    """What a decision reads besides the job and its end, the same for a whole batch."""

    secrets: tuple[str, ...] = ()  # scrubbed from every error and traceback
    unknown_type_grace_seconds: float = 0.0  # CRONTICK_UNKNOWN_TYPE_GRACE_SECONDS
    process: str = ""  # this process, as an unknown type's error names it ("host pid 123")


def succeeded(job: Job) -> Outcome:
    return Outcome(job.id, job.attempt, "done", job.attempt)


def decide(job: Job, ended: Ended, finished: datetime, rand: float, policy: retry.RetryPolicy, rules: Rules) -> Outcome:
    """The outcome of `job`'s attempt, which ended as `ended` at `finished` (the database's time).

    `rand` in [0, 1): the jitter of a retry's or a throttle's delay; `policy`: the job type's retry policy.
    Snoozes, throttles, parks and an unknown type's put-back hand the attempt back (attempts - 1).
    """
    if ended.parked is not None:  # durable steps: pending (a sleep) or waiting, the attempt handed back
        until = ended.parked.until(finished)
        park = ended.parked.park(until)
        return Outcome(job.id, job.attempt, ended.parked.status, job.attempt - 1, until, None, True, None, park)
    if yields(ended):  # pending, due at once, its attempt handed back and its recorded steps kept
        return Outcome(job.id, job.attempt, "pending", job.attempt - 1, finished, yielded=True)
    if ended.unknown_type:
        waiting = _wait_for_a_process_that_knows(job, finished, rules)
        if waiting is not None:
            return waiting
    if ended.snooze_seconds is not None:
        if job.snoozes < MAX_SNOOZES:  # pending again, its attempt handed back
            run_after = finished + timedelta(seconds=ended.snooze_seconds)
            return Outcome(job.id, job.attempt, "pending", job.attempt - 1, run_after, None, True)
        ended = Ended(
            f"SnoozeLimit: job {job.id} ({job.type}) asked to snooze after {job.snoozes} snoozes, the most "
            f"allowed (crontick.jobs.decision.MAX_SNOOZES = {MAX_SNOOZES}); this attempt counts as failed"
        )
    if ended.error is None:
        return succeeded(job)
    retry_after = ended.retry_after_seconds
    if ended.throttle is not None:
        wait = retry.throttle_snooze_seconds(ended.throttle, finished, rand)
        if wait is not None and job.snoozes < MAX_SNOOZES:  # snoozed as by crontick.Snooze, saying why
            return _throttled(job, ended.error, wait, finished, rules)
        retry_after = wait if retry_after is None else retry_after  # past MAX_SNOOZES: a failed attempt
    return _failed(job, ended, finished, rand, policy, rules, retry_after)


def yields(ended: Ended) -> bool:
    """Whether a handler the budget stopped, or one whose next step did not fit what was left of it, yields.

    It yields when this run recorded a step (progress: the next run resumes after it), or when its step did not
    fit because the run began on the budget's tail (a later tick starts it sooner). Otherwise its attempt fails
    as before: a handler that makes no progress in a whole budget would otherwise come back forever.
    """
    if ended.budget_stopped or ended.deferred:
        return ended.new_steps > 0 or (ended.deferred and ended.started_late)
    return False


def _throttled(job: Job, error: str, wait: float, finished: datetime, rules: Rules) -> Outcome:
    text = storable(
        f"Throttled: {scrub(error, rules.secrets)}; put back for {wait:.1f} s (the provider's "
        f"Retry-After), attempt not counted (snooze {job.snoozes + 1} of {MAX_SNOOZES})"
    )
    return Outcome(job.id, job.attempt, "pending", job.attempt - 1, finished + timedelta(seconds=wait), text, True)


def _failed(
    job: Job,
    ended: Ended,
    finished: datetime,
    rand: float,
    policy: retry.RetryPolicy,
    rules: Rules,
    retry_after: float | None,
) -> Outcome:
    """A failed attempt: retried after the policy's delay (or the provider's Retry-After), or the job fails."""
    assert ended.error is not None
    decision = retry.after_failure(job.attempt, job.max_attempts, policy, finished, rand, ended.permanent, retry_after)
    text = scrub(ended.error, rules.secrets)
    trace = ended.traceback and scrub(ended.traceback, rules.secrets, max_chars=TRACEBACK_MAX_CHARS)
    if isinstance(decision, retry.RetryAt):
        return Outcome(job.id, job.attempt, "pending", job.attempt, decision.run_after, text, traceback=trace)
    return Outcome(job.id, job.attempt, "failed", job.attempt, None, text, traceback=trace)


def _wait_for_a_process_that_knows(job: Job, now: datetime, rules: Rules) -> Outcome | None:
    """A job of a type this process does not know, put back (its attempt handed back, like a snooze) until one that
    knows it claims it: a rolling deploy, an old revision or a weighted alias may still serve the old code. None
    once CRONTICK_UNKNOWN_TYPE_GRACE_SECONDS have passed since it was created: then it fails, naming the type."""
    give_up_at = job.created_at + timedelta(seconds=rules.unknown_type_grace_seconds)
    if now >= give_up_at:
        return None
    again = min(now + timedelta(seconds=UNKNOWN_TYPE_RECHECK_SECONDS), give_up_at)
    text = (
        f"UnknownJobType: job {job.id} has type {job.type!r}, which the process that claimed it ({rules.process}) has "
        f"no handler for; waiting for one that does until {give_up_at.isoformat()} "
        f"(CRONTICK_UNKNOWN_TYPE_GRACE_SECONDS), then it fails"
    )
    return Outcome(job.id, job.attempt, "pending", job.attempt - 1, again, storable(text), True)
