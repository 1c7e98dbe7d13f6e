"""What the claim needs from code: each rate limit named by a handler (count, window, types), and each type
whose group_concurrency is above 1.

The claim statement (sql/functions/job_claim_due.sql) takes it as one JSON argument, `flow`, built
here from the handler registry and the declared limits. None when no handler of this process
names a limit: the claim is then the plain statement (pauses aside, which it reads itself).
Groups of limit 1 need nothing from here: the rows carry them (jobs.held, kept by triggers).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from psycopg.types.json import Jsonb

from crontick import logs
from crontick.flow import limits

_cache: tuple[tuple[Any, ...], Jsonb | None] | None = None


def claim_flow() -> Jsonb | None:
    """The claim's `flow` argument, or None (a limit named by a handler but never declared holds its jobs back). Read without loading the registry (an idle cold start
    that declared no handler never imports it) and rebuilt only when a declaration changed."""
    global _cache
    registry: ModuleType | None = sys.modules.get("crontick.jobs.registry")
    if registry is None:
        return None
    named: list[tuple[str, str]] = registry.rate_limited()
    wide: list[tuple[str, int]] = registry.group_wide()
    key = (tuple(named), tuple(wide), tuple(limits.declared().values()))
    if _cache is not None and _cache[0] == key:
        return _cache[1]
    by_limit: dict[str, list[str]] = {}
    for type, name in named:
        by_limit.setdefault(name, []).append(type)
    rows = []
    for name, types in sorted(by_limit.items()):
        limit = limits.get(name)
        if limit is None:
            # Named but not declared (a typo, a module not imported): its jobs wait rather than run
            # unthrottled against a provider, and the log says why.
            logs.warning(
                "rate_limit_undeclared",
                error=f"@crontick.handler({types[0]!r}, rate_limit={name!r}): expected a limit declared with "
                f"crontick.rate_limit({name!r}, count, per_seconds=...), got none by that name; its jobs wait",
            )
            limit = limits.RateLimit(name, 0, 60.0)
        rows.append({"name": name, "count": limit.count, "seconds": limit.per_seconds, "types": sorted(types)})
    flow = Jsonb({"limits": rows, "wide": [{"type": t, "n": n} for t, n in wide]}) if rows or wide else None
    _cache = (key, flow)
    return flow
