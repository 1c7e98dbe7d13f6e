"""Retry policy: the default 1/5/30-minute schedule, jitter, per-type policies and the retry-or-fail decision."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from crontick import Exponential, Retry
from crontick.retry import DEFAULT_MAX_ATTEMPTS, DEFAULT_POLICY, GiveUp, RetryAt, after_failure

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MIDDLE = 0.5  # rand value that gives the delay without jitter


@pytest.mark.parametrize(("attempt", "minutes"), [(1, 1), (2, 5), (3, 30)])
def test_default_schedule_is_1_5_30_minutes(attempt: int, minutes: int) -> None:
    assert DEFAULT_POLICY.delay_seconds(attempt, MIDDLE) == minutes * 60


def test_default_max_attempts_is_four() -> None:
    assert DEFAULT_MAX_ATTEMPTS == 4


@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_jitter_stays_within_twenty_percent(attempt: int) -> None:
    base = DEFAULT_POLICY.delay_seconds(attempt, MIDDLE)
    rng = random.Random(attempt)
    delays = [DEFAULT_POLICY.delay_seconds(attempt, rng.random()) for _ in range(2000)]
    assert all(0.8 * base <= d <= 1.2 * base for d in delays)
    # The jitter really spreads a burst: both ends of the band are used.
    assert min(delays) < 0.85 * base and max(delays) > 1.15 * base


def test_jitter_bounds_are_exact_at_the_ends_of_rand() -> None:
    assert DEFAULT_POLICY.delay_seconds(1, 0.0) == pytest.approx(48.0)
    assert DEFAULT_POLICY.delay_seconds(1, 1.0) == pytest.approx(72.0)


def test_schedule_repeats_its_last_delay() -> None:
    assert Retry((10.0, 20.0), jitter_fraction=0).delay_seconds(7, MIDDLE) == 20.0


@pytest.mark.parametrize(("delays", "jitter"), [((), 0.2), ((-1.0,), 0.2), ((60.0,), 1.0), ((60.0,), -0.1)])
def test_schedule_rejects_bad_values_with_expected_got(delays: tuple[float, ...], jitter: float) -> None:
    with pytest.raises(ValueError, match="expected .*got"):
        Retry(delays, jitter_fraction=jitter)


@pytest.mark.parametrize(("attempt", "seconds"), [(1, 10), (2, 20), (3, 40), (5, 160), (6, 300), (12, 300)])
def test_exponential_is_2_to_the_n_times_5_capped_at_300(attempt: int, seconds: float) -> None:
    assert Exponential(base_seconds=5, cap_seconds=300).delay_seconds(attempt, MIDDLE) == seconds


def test_exponential_jitter_applies_after_the_cap() -> None:
    policy = Exponential(base_seconds=5, cap_seconds=300, jitter_fraction=0.2)
    assert policy.delay_seconds(10, 0.0) == pytest.approx(240.0)
    assert policy.delay_seconds(10, 1.0) == pytest.approx(360.0)


@pytest.mark.parametrize(("attempt", "minutes"), [(1, 1), (2, 5), (3, 30)])
def test_failed_attempt_with_attempts_left_retries_at_now_plus_delay(attempt: int, minutes: int) -> None:
    decision = after_failure(attempt, 4, DEFAULT_POLICY, NOW, MIDDLE)
    assert decision == RetryAt(NOW + timedelta(minutes=minutes))


def test_fourth_failed_attempt_fails() -> None:
    assert after_failure(4, 4, DEFAULT_POLICY, NOW, MIDDLE) == GiveUp()


def test_attempt_past_max_fails() -> None:
    # A job whose max_attempts was lowered after it ran (or a rescued over-run) still ends.
    assert after_failure(5, 4, DEFAULT_POLICY, NOW, MIDDLE) == GiveUp()


def test_permanent_error_fails_on_the_first_attempt() -> None:
    assert after_failure(1, 4, DEFAULT_POLICY, NOW, MIDDLE, permanent=True) == GiveUp()


def test_job_with_one_attempt_fails_at_once() -> None:
    assert after_failure(1, 1, DEFAULT_POLICY, NOW, MIDDLE) == GiveUp()


def test_job_with_more_attempts_keeps_repeating_the_last_delay() -> None:
    decision = after_failure(6, 10, DEFAULT_POLICY, NOW, MIDDLE)
    assert decision == RetryAt(NOW + timedelta(minutes=30))


def test_per_type_policy_drives_the_decision() -> None:
    decision = after_failure(3, 4, Exponential(base_seconds=5, cap_seconds=300), NOW, MIDDLE)
    assert decision == RetryAt(NOW + timedelta(seconds=40))


def test_decision_uses_the_now_it_is_given() -> None:
    later = NOW + timedelta(days=3)
    decision = after_failure(1, 4, DEFAULT_POLICY, later, 0.0)
    assert isinstance(decision, RetryAt)
    assert decision.run_after == later + timedelta(seconds=48)
