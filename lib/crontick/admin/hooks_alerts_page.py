"""The admin's Hooks page (declared inbound hooks and their recent events) and Alerts page (the alert outbox)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import hooks_alerts_store as feeds
from crontick.admin import params
from crontick.admin.pages import PAGE_ROWS, _cursor, panel
from crontick.admin.view import View, gate
from crontick.errors import BadCursor

HOOK_MAX_CHARS = 63  # crontick.inbound's longest name


def declared_hooks() -> list[dict[str, str]]:
    """The hooks `crontick.inbound(...)` declared in this process, by name: never their secrets."""
    from crontick.hooks.inbound import hooks as declared

    return [
        {"name": h.name, "verify": h.verify, "job_type": h.job_type}
        for h in sorted(declared().values(), key=lambda h: h.name)
    ]


def _event_cursor(view: View) -> feeds.EventCursor | None:
    """The events page's cursor; a cursor we did not issue starts from the newest event again."""
    try:
        return feeds.decode_event_cursor(view.request.query_params.get("cursor") or None)
    except BadCursor:
        return None


async def hooks(request: Request) -> Response:
    async def build(view: View) -> Response:
        hook = params.text(view.request.query_params.get("hook"), "hook", max_chars=HOOK_MAX_CHARS)
        before = _event_cursor(view)
        result = await panel(view, lambda tx: feeds.list_events(tx, hook=hook or None, before=before, limit=PAGE_ROWS))
        rows, next_cursor = result if result is not None else (None, None)
        data: dict[str, Any] = {"hooks": declared_hooks(), "events": rows, "next_cursor": next_cursor, "hook": hook}
        return view.page("hooks.html", data, title="Hooks", nav="hooks")

    return await gate(request, build)


async def alerts(request: Request) -> Response:
    async def build(view: View) -> Response:
        status = params.choice(view.request.query_params.get("status"), "status", feeds.ALERT_STATUSES)
        before = _cursor(view)
        result = await panel(
            view, lambda tx: feeds.list_alerts(tx, status=status or None, before_id=before, limit=PAGE_ROWS)
        )
        rows, next_cursor = result if result is not None else (None, None)
        data = {
            "alerts": rows,
            "next_cursor": next_cursor,
            "status": status,
            "statuses": feeds.ALERT_STATUSES,
            "sending": view.settings.alert_webhook_url is not None,
        }
        if view.json:
            return view.page("alerts.html", data, title="Alerts", nav="alerts")
        return view.page("alerts.html", {**data, "subject_link": subject_link}, title="Alerts", nav="alerts")

    return await gate(request, build)


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
