"""The Hooks page (declared inbound hooks and their recent events) and the Alerts page (the alert outbox)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import gate, params
from crontick.admin.feeds import store
from crontick.admin.view import PAGE_ROWS, View
from crontick.errors import BadCursor

HOOK_MAX_CHARS = 63  # crontick.inbound's longest name


def _event_cursor(view: View) -> store.EventCursor | None:
    """The events page's cursor; a cursor we did not issue starts from the newest event again."""
    try:
        return store.decode_event_cursor(view.request.query_params.get("cursor") or None)
    except BadCursor:
        return None


async def hooks(request: Request) -> Response:
    async def build(view: View) -> Response:
        hook = params.text(view.request.query_params.get("hook"), "hook", max_chars=HOOK_MAX_CHARS)
        before = _event_cursor(view)
        result = await view.panel(lambda tx: store.list_events(tx, hook=hook or None, before=before, limit=PAGE_ROWS))
        rows, next_cursor = result if result is not None else (None, None)
        data: dict[str, Any] = {
            "hooks": store.declared_hooks(),
            "events": rows,
            "next_cursor": next_cursor,
            "hook": hook,
        }
        return view.page("hooks.html", data, title="Hooks", nav="hooks")

    return await gate.page(request, build)


async def alerts(request: Request) -> Response:
    async def build(view: View) -> Response:
        status = params.choice(view.request.query_params.get("status"), "status", store.ALERT_STATUSES)
        before = view.cursor()
        result = await view.panel(
            lambda tx: store.list_alerts(tx, status=status or None, before_id=before, limit=PAGE_ROWS)
        )
        rows, next_cursor = result if result is not None else (None, None)
        data = {
            "alerts": rows,
            "next_cursor": next_cursor,
            "status": status,
            "statuses": store.ALERT_STATUSES,
            "sending": view.settings.alert_webhook_url is not None,
        }
        if view.json:
            return view.page("alerts.html", data, title="Alerts", nav="alerts")
        return view.page("alerts.html", {**data, "subject_link": subject_link}, title="Alerts", nav="alerts")

    return await gate.page(request, build)


def subject_link(subject: str) -> str | None:
    """The admin page an alert's subject names ('job:42' is job 42), or None."""
    kind, _, rest = subject.partition(":")
    if kind == "job" and rest.isdigit():
        return f"/admin/jobs/{rest}"
    if kind == "reminder":
        return "/admin/reminders"
    if kind == "scheduler":
        return "/admin/ticks"
    return None
