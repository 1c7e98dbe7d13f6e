"""Retry policy: pure functions that turn a failed attempt into 'retry at T' or 'failed'."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, Protocol

DEFAULT_DELAYS_SECONDS: tuple[float, ...] = (60.0, 300.0, 1800.0)
DEFAULT_MAX_ATTEMPTS = 4
DEFAULT_JITTER_FRACTION = 0.2


class RetryPolicy(Protocol):
    def delay_seconds(self, attempt: int, rand: float) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based); rand is in [0, 1)."""
        ...


@dataclass(frozen=True)
class Retry:
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


DEFAULT_POLICY = Retry()

# The policy's name before 0.2 (`crontick.Schedule`), kept so existing code runs; it read like `crontick.schedule`.
Schedule = Retry


@dataclass(frozen=True)
class RetryAt:
    run_after: datetime


@dataclass(frozen=True)
class GiveUp:
    pass


def after_failure(
    attempt: int,
    max_attempts: int,
    policy: RetryPolicy,
    now: datetime,
    rand: float,
    permanent: bool = False,
    retry_after_seconds: float | None = None,
) -> RetryAt | GiveUp:
    """Decide what a failed attempt leads to: a permanent error or the last attempt fails, else retry later.

    The retry waits max(the policy's delay, retry_after_seconds): a provider's Retry-After on a
    429 or 503 wins when it asks for longer than the next backoff step.
    """
    if permanent or attempt >= max_attempts:
        return GiveUp()
    delay = policy.delay_seconds(attempt, rand)
    return RetryAt(now + timedelta(seconds=max(delay, retry_after_seconds or 0.0)))


# Provider back-off (CONTRACT.md "Provider back-off"): a handler whose exception carries an HTTP
# response with one of these statuses and a Retry-After is snoozed for that long, spending no attempt.
THROTTLE_STATUSES = frozenset({429, 503})
# A Retry-After longer than this (an hour) is cut to it: the job comes back then and, if the provider
# still says wait, snoozes again (each snooze counts against crontick.jobs.decision.MAX_SNOOZES).
MAX_THROTTLE_SECONDS = 3600.0
# Jobs throttled together come back spread over this fraction of their wait (later, never sooner than asked).
THROTTLE_JITTER_FRACTION = 0.03
# How far down an exception's __cause__ / __context__ chain a response is looked for (an SDK's error
# raised from httpx's, an app's own wrapper raised from the SDK's).
_CHAIN_DEPTH = 4


class Throttle(NamedTuple):
    """What a handler's exception said about the provider's limit: the status and its Retry-After headers."""

    status: int
    retry_after: str | None
    retry_after_ms: str | None  # OpenAI's and Anthropic's finer header; read first when present


def throttle_of(exc: BaseException) -> Throttle | None:
    """The 429 or 503 that `exc` carries as `exc.response` (httpx.HTTPStatusError, the OpenAI and Anthropic
    SDKs' errors, requests' HTTPError), or an exception it was raised from carries; None otherwise."""
    seen: BaseException | None = exc
    for _ in range(_CHAIN_DEPTH):
        if seen is None:
            return None
        response = getattr(seen, "response", None)
        status = getattr(response, "status_code", None)
        headers = getattr(response, "headers", None)
        if isinstance(status, int) and status in THROTTLE_STATUSES and headers is not None:
            return Throttle(status, _header(headers, "retry-after"), _header(headers, "retry-after-ms"))
        seen = seen.__cause__ or seen.__context__
    return None


def _header(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)
        if value is None:  # a plain dict, not case-insensitive
            value = headers.get(name.title())
    except Exception:  # noqa: BLE001 - headers of an odd shape: as if absent
        return None
    return value if isinstance(value, str) else None


def throttle_snooze_seconds(throttle: Throttle, now: datetime, rand: float) -> float | None:
    """How long to snooze a throttled job: min(Retry-After, MAX_THROTTLE_SECONDS) × (1 + 0.03 × rand).

    Retry-After is delta-seconds or an HTTP date (as seconds after `now`, at least 0);
    `retry-after-ms` (milliseconds) wins when present. None when neither is readable: the
    failure is then an ordinary one, retried with backoff.
    """
    seconds = None
    if throttle.retry_after_ms is not None:
        ms = _delta(throttle.retry_after_ms)
        seconds = None if ms is None else ms / 1000.0
    if seconds is None:
        seconds = retry_after_seconds(throttle.retry_after, now)
    if seconds is None:
        return None
    return min(seconds, MAX_THROTTLE_SECONDS) * (1 + THROTTLE_JITTER_FRACTION * rand)


def retry_after_seconds(value: str | None, now: datetime) -> float | None:
    """A Retry-After header as seconds after `now`: delta-seconds or an HTTP date (past: 0); None when absent or unreadable."""
    seconds = _delta(value)
    if seconds is not None or not value or not value.strip():
        return seconds
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        when = when.replace(tzinfo=UTC)
    return max((when - now).total_seconds(), 0.0)


def _delta(value: str | None) -> float | None:
    text = (value or "").strip()
    return float(text) if text and text.isascii() and text.isdigit() else None
