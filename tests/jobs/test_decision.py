"""crontick.jobs.decision.decide, every branch, without a database or a handler: a job and how its run ended in,
its Outcome out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from crontick import retry
from crontick.jobs import decision
from crontick.jobs.decision import MAX_SNOOZES, SUCCEEDED, Ended, Rules
from crontick.jobs.job import Job, Outcome
from crontick.workflows.steps import Parked

CREATED = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
FINISHED = CREATED + timedelta(minutes=10)
POLICY = retry.Retry((60.0, 300.0), jitter_fraction=0.0)
RULES = Rules(secrets=("s3cret",), unknown_type_grace_seconds=3600.0, process="host-a pid 7")


def job(attempt: int = 1, max_attempts: int = 4, snoozes: int = 0) -> Job:
    return Job(42, "mail.send", {"to": "a@example.com"}, attempt, max_attempts, CREATED, snoozes=snoozes)


def decide(ended: Ended, the_job: Job | None = None, rand: float = 0.5, rules: Rules = RULES) -> Outcome:
    return decision.decide(the_job or job(), ended, FINISHED, rand, POLICY, rules)


def test_success_is_done_with_its_attempt_counted() -> None:
    assert decide(SUCCEEDED, job(attempt=2)) == Outcome(42, 2, "done", 2)
    assert decision.succeeded(job(attempt=3)) == Outcome(42, 3, "done", 3)


def test_a_failure_before_the_last_attempt_is_retried_after_the_policys_delay_its_error_scrubbed() -> None:
    ended = Ended("ValueError: token s3cret refused", traceback="Traceback ...\nValueError: s3cret")
    assert decide(ended, job(attempt=1)) == Outcome(
        42, 1, "pending", 1, FINISHED + timedelta(seconds=60), "ValueError: token [redacted] refused",
        traceback="Traceback ...\nValueError: [redacted]",
    )  # fmt: skip
    assert decide(ended, job(attempt=3)).run_after == FINISHED + timedelta(seconds=300)  # the last delay repeats


def test_the_last_attempt_fails() -> None:
    assert decide(Ended("ValueError: no"), job(attempt=4, max_attempts=4)) == Outcome(
        42, 4, "failed", 4, None, "ValueError: no"
    )


def test_a_permanent_error_fails_at_once() -> None:
    assert decide(Ended("PermanentError: bad input", permanent=True), job(attempt=1)).status == "failed"


def test_a_retry_after_longer_than_the_delay_wins() -> None:
    outcome = decide(Ended("RetryableError: busy", retry_after_seconds=600.0), job(attempt=1))
    assert (outcome.status, outcome.run_after) == ("pending", FINISHED + timedelta(seconds=600))
    shorter = decide(Ended("RetryableError: busy", retry_after_seconds=5.0), job(attempt=1))
    assert shorter.run_after == FINISHED + timedelta(seconds=60)


def test_a_snooze_keeps_its_attempt_and_counts_as_a_snooze() -> None:
    outcome = decide(Ended(snooze_seconds=30.0), job(attempt=2, snoozes=MAX_SNOOZES - 1))
    assert outcome == Outcome(42, 2, "pending", 1, FINISHED + timedelta(seconds=30), None, True)


def test_a_snooze_past_the_limit_is_a_failed_attempt() -> None:
    outcome = decide(Ended(snooze_seconds=30.0), job(attempt=2, snoozes=MAX_SNOOZES))
    assert (outcome.status, outcome.attempts, outcome.snoozed) == ("pending", 2, False)
    assert outcome.last_error is not None
    assert outcome.last_error.startswith(f"SnoozeLimit: job 42 (mail.send) asked to snooze after {MAX_SNOOZES} snoozes")
    last = decide(Ended(snooze_seconds=30.0), job(attempt=4, snoozes=MAX_SNOOZES))
    assert last.status == "failed"


def test_an_unknown_type_is_put_back_within_its_grace_then_fails() -> None:
    ended = Ended(
        "UnknownJobType: job 42 has type 'mail.send', which no handler is registered for", True, unknown_type=True
    )
    outcome = decide(ended, job(attempt=1))
    assert (outcome.status, outcome.attempts, outcome.snoozed) == ("pending", 0, True)
    assert outcome.run_after == FINISHED + timedelta(seconds=decision.UNKNOWN_TYPE_RECHECK_SECONDS)
    assert outcome.last_error is not None and "(host-a pid 7)" in outcome.last_error
    # The recheck never passes the grace's end.
    near = decide(ended, job(attempt=1), rules=RULES._replace(unknown_type_grace_seconds=630.0))
    assert near.run_after == CREATED + timedelta(seconds=630)
    # Past the grace: a permanent failure, naming the type.
    late = decide(ended, job(attempt=1), rules=RULES._replace(unknown_type_grace_seconds=600.0))
    assert (late.status, late.attempts, late.last_error) == ("failed", 1, ended.error)


def test_a_throttle_with_retry_after_snoozes_saying_why() -> None:
    ended = Ended("HTTPStatusError: 429 for key s3cret", throttle=retry.Throttle(429, "20", None))
    outcome = decide(ended, job(attempt=1, snoozes=3), rand=0.0)
    assert (outcome.status, outcome.attempts, outcome.snoozed) == ("pending", 0, True)
    assert outcome.run_after == FINISHED + timedelta(seconds=20)
    assert outcome.last_error == (
        "Throttled: HTTPStatusError: 429 for key [redacted]; put back for 20.0 s (the provider's Retry-After), "
        f"attempt not counted (snooze 4 of {MAX_SNOOZES})"
    )


def test_a_throttle_without_a_readable_retry_after_is_an_ordinary_failure() -> None:
    outcome = decide(Ended("HTTPStatusError: 503", throttle=retry.Throttle(503, None, None)), job(attempt=1))
    assert (outcome.status, outcome.attempts, outcome.run_after) == ("pending", 1, FINISHED + timedelta(seconds=60))


def test_a_throttle_past_the_snooze_limit_retries_no_sooner_than_its_retry_after() -> None:
    ended = Ended("HTTPStatusError: 429", throttle=retry.Throttle(429, "900", None))
    outcome = decide(ended, job(attempt=1, snoozes=MAX_SNOOZES), rand=0.0)
    assert (outcome.status, outcome.attempts, outcome.snoozed) == ("pending", 1, False)
    assert outcome.run_after == FINISHED + timedelta(seconds=900)
    assert decide(ended, job(attempt=4, snoozes=MAX_SNOOZES)).status == "failed"


def test_a_sleep_parks_the_job_pending_and_a_wait_parks_it_waiting_handing_the_attempt_back() -> None:
    slept = decide(Ended(parked=Parked("nap", "sleep", 90.0)), job(attempt=2))
    assert (slept.status, slept.attempts, slept.run_after, slept.snoozed) == (
        "pending", 1, FINISHED + timedelta(seconds=90), True,
    )  # fmt: skip
    assert slept.park is not None and slept.park[:2] == ["nap", "sleep"]
    waited = decide(Ended(parked=Parked("answer", "wait", 300.0, event_key="k")), job(attempt=2))
    assert (waited.status, waited.attempts, waited.run_after) == ("waiting", 1, FINISHED + timedelta(seconds=300))
    assert waited.park is not None and waited.park[:3] == ["answer", "wait", "k"]


def test_a_handler_the_budget_stopped_after_a_new_step_yields_due_at_once_its_attempt_handed_back() -> None:
    ended = Ended("TimeoutError: stopped (the tick's time budget)", budget_stopped=True, new_steps=2)
    assert decide(ended, job(attempt=3)) == Outcome(42, 3, "pending", 2, FINISHED, yielded=True)


def test_a_handler_the_budget_stopped_without_a_new_step_fails_its_attempt_as_before() -> None:
    ended = Ended("TimeoutError: stopped (the tick's time budget)", budget_stopped=True, new_steps=0)
    outcome = decide(ended, job(attempt=1))
    assert (outcome.status, outcome.attempts, outcome.yielded) == ("pending", 1, False)
    assert outcome.run_after == FINISHED + timedelta(seconds=60) and outcome.last_error == ended.error
    assert decide(ended, job(attempt=4, max_attempts=4)).status == "failed"


def test_a_step_that_did_not_fit_yields_after_progress_or_when_its_run_began_on_the_tail() -> None:
    assert decide(Ended("StepDeferred: b", deferred=True, new_steps=1)).yielded
    assert decide(Ended("StepDeferred: b", deferred=True, started_late=True)).yielded
    stuck = decide(Ended("StepDeferred: b", deferred=True), job(attempt=1))
    assert (stuck.yielded, stuck.attempts, stuck.last_error) == (False, 1, "StepDeferred: b")


def test_steps_recorded_in_a_run_that_failed_on_its_own_do_not_make_a_yield() -> None:
    assert not decide(Ended("ValueError: no", new_steps=3), job(attempt=1)).yielded
    assert not decision.yields(Ended(started_late=True))
