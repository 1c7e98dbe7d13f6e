"""The audit log of admin actions: its page, its API route and its store (which every action writes through)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from crontick.admin import routing
from crontick.admin.routing import TEXT, ApiRoute, Operation, Param


def routes() -> list[BaseRoute]:
    return [*routing.page("/admin/audit", "audit.page:audit")]


def api_routes() -> list[ApiRoute]:
    return [
        routing.api(
            "/api/admin/audit",
            "audit.api:list_audit",
            "GET",
            Operation(
                "The audit log of admin actions, newest first (keyset pages)",
                ("AuditPage", "A page of entries."),
                query=(Param("limit", "Limit", "Rows per page."), Param("cursor", TEXT, "The previous next_cursor.")),
            ),
        )
    ]
