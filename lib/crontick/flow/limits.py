"""`crontick.rate_limit(name, count, per_seconds=...)`: a limit on job starts, shared by every type that names it.

A limit lives in code, not on a row: each claim passes every declared limit's count and window
(crontick.flow.claim_args), so a value changed between deploys counts from the next claim on.
The database keeps only the starts themselves (crontick_rate_limits), so every process and tick
counts against one window.
"""

from __future__ import annotations

from dataclasses import dataclass

from crontick.errors import ConfigError
from crontick.text import text_problem


@dataclass(frozen=True)
class RateLimit:
    name: str
    count: int  # at most this many starts ...
    per_seconds: float  # ... within any window this long


_limits: dict[str, RateLimit] = {}


def rate_limit(name: str, count: int, *, per_seconds: float) -> RateLimit:
    """Declare the limit `name`: at most `count` jobs of the types naming it (`@crontick.handler(rate_limit=name)`)
    start within any `per_seconds` window, across every process and tick (a retry is a start too).

    Declaring a name again replaces its values (the last declaration wins), as a new deploy does.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"crontick.rate_limit: expected a non-empty limit name, got {name!r}")
    if problem := text_problem("a limit name", name):  # every tick's claim carries it
        raise ConfigError(f"crontick.rate_limit: {problem}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count < 2**31:
        raise ConfigError(f"crontick.rate_limit({name!r}): expected count as an integer >= 1, got {count!r}")
    if isinstance(per_seconds, bool) or not isinstance(per_seconds, int | float) or not 0 < per_seconds <= 86400 * 366:
        raise ConfigError(
            f"crontick.rate_limit({name!r}): expected per_seconds as a number of seconds > 0 (a year at most), "
            f"got {per_seconds!r}"
        )
    limit = RateLimit(name, count, float(per_seconds))
    _limits[name] = limit
    return limit


def declared() -> dict[str, RateLimit]:
    """Every limit declared in this process, by name."""
    return dict(_limits)


def get(name: str) -> RateLimit | None:
    return _limits.get(name)
