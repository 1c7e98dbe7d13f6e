"""Retry policy: pure functions that turn a failed attempt into 'retry at T' or 'failed'."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

DEFAULT_DELAYS_SECONDS: tuple[float, ...] = (60.0, 300.0, 1800.0)
DEFAULT_MAX_ATTEMPTS = 4
DEFAULT_JITTER_FRACTION = 0.2


class RetryPolicy(Protocol):
    def delay_seconds(self, attempt: int, rand: float) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based); rand is in [0, 1)."""
        ...


@dataclass(frozen=True)
class Schedule:
    """A fixed list of delays, the last repeated: delay(n) = delays[min(n, len) - 1] × (1 ± jitter).

    The default, (60, 300, 1800) with ±20 % jitter, gives 1 min, 5 min, 30 min. Jitter spreads
    a burst of jobs that failed together (a provider outage) so they do not retry together.
    """

    delays_seconds: tuple[float, ...] = DEFAULT_DELAYS_SECONDS
    jitter_fraction: float = DEFAULT_JITTER_FRACTION

    def __post_init__(self) -> None:
        if not self.delays_seconds or any(d < 0 for d in self.delays_seconds):
            raise ValueError(f"expected a non-empty tuple of delays >= 0, got: {self.delays_seconds!r}")
        if not 0 <= self.jitter_fraction < 1:
            raise ValueError(f"expected jitter_fraction in [0, 1), got: {self.jitter_fraction!r}")

    def delay_seconds(self, attempt: int, rand: float) -> float:
        base = self.delays_seconds[min(max(attempt, 1), len(self.delays_seconds)) - 1]
        return base * (1 + self.jitter_fraction * (2 * rand - 1))


@dataclass(frozen=True)
class Exponential:
    """delay(n) = min(2^n × base_seconds, cap_seconds) × (1 ± jitter); e.g. min(2^n × 5 s, 300 s)."""

    base_seconds: float = 5.0
    cap_seconds: float = 300.0
    jitter_fraction: float = 0.0

    def delay_seconds(self, attempt: int, rand: float) -> float:
        base = min((2.0 ** max(attempt, 0)) * self.base_seconds, self.cap_seconds)
        return base * (1 + self.jitter_fraction * (2 * rand - 1))


DEFAULT_POLICY = Schedule()


@dataclass(frozen=True)
class Retry:
    run_after: datetime


@dataclass(frozen=True)
class Fail:
    pass


def after_failure(
    attempt: int,
    max_attempts: int,
    policy: RetryPolicy,
    now: datetime,
    rand: float,
    permanent: bool = False,
    retry_after_seconds: float | None = None,
) -> Retry | Fail:
    """Decide what a failed attempt leads to: a permanent error or the last attempt fails, else retry later.

    The retry waits max(the policy's delay, retry_after_seconds): a provider's Retry-After on a
    429 or 503 wins when it asks for longer than the next backoff step.
    """
    if permanent or attempt >= max_attempts:
        return Fail()
    delay = policy.delay_seconds(attempt, rand)
    return Retry(now + timedelta(seconds=max(delay, retry_after_seconds or 0.0)))
