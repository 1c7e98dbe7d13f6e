"""What comes in and goes out: the Hooks page (declared inbound hooks, recorded events) and the Alerts page (the alert
outbox), /api/admin/hooks and /alerts, and their store."""

from __future__ import annotations

from starlette.routing import BaseRoute

from crontick.admin import routing
from crontick.admin.routing import CURSOR, LIMIT, TEXT, ApiRoute, Operation, Param


def routes() -> list[BaseRoute]:
    return [*routing.page("/admin/hooks", "feeds.page:hooks"), *routing.page("/admin/alerts", "feeds.page:alerts")]


def api_routes() -> list[ApiRoute]:
    return [
        routing.api(
            "/api/admin/hooks",
            "feeds.api:list_hooks",
            "GET",
            Operation(
                "The declared inbound hooks (never their secrets) and recorded events, newest first",
                ("HookPage", "The hooks and a page of events."),
                query=(Param("hook", TEXT, "Only this hook's events."), LIMIT, CURSOR),
            ),
        ),
        routing.api(
            "/api/admin/alerts",
            "feeds.api:list_alerts",
            "GET",
            Operation(
                "The alert outbox, newest first (errors cut to 200 characters, no bodies)",
                ("AlertPage", "A page of alerts."),
                query=(Param("status", "AlertStatus", "Only this status."), LIMIT, CURSOR),
            ),
        ),
    ]
