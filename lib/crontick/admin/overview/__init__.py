"""The queue at a glance: the Overview page (counts, the scheduler's health, the hourly chart, per-type figures) and
the Ticks page, /api/admin/stats, /ticks and /types, and their store."""

from __future__ import annotations

from starlette.routing import BaseRoute

from crontick.admin import routing
from crontick.admin.routing import CURSOR, LIMIT, ApiRoute, Operation


def routes() -> list[BaseRoute]:
    return [
        *routing.page("/admin/ticks", "overview.page:ticks"),
        *routing.page("/admin/overview", "overview.page:overview"),
    ]


def api_routes() -> list[ApiRoute]:
    return [
        routing.api(
            "/api/admin/stats",
            "overview.api:stats",
            "GET",
            Operation(
                "Capped counts per status, oldest due job, scheduler staleness, hourly done/failed",
                ("Stats", "The numbers."),
            ),
        ),
        routing.api(
            "/api/admin/ticks",
            "overview.api:list_ticks",
            "GET",
            Operation(
                "Recent ticks, with the gap since the one before (flagged over 2x the expected interval)",
                ("TickPage", "A page of ticks."),
                query=(LIMIT, CURSOR),
            ),
        ),
        routing.api(
            "/api/admin/types",
            "overview.api:list_types",
            "GET",
            Operation(
                "Per job type: done and failed in the last hour and 24 hours, p50/p95 duration, oldest due job,"
                " paused; worst first",
                ("TypeFigures", "Every type seen in 24 hours, with pending jobs, or paused."),
            ),
        ),
    ]
