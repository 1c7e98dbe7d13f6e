"""The feeds under /api/admin: the declared inbound hooks with their recorded events, and the alert outbox."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import answer, inputs, tx
from crontick.admin.feeds import store


async def list_hooks(request: Request, conn: tx.Conn, role: str) -> Response:
    q = request.query_params
    rows, cursor = await store.list_events(
        conn,
        hook=inputs.text(q.get("hook"), "hook"),
        before=store.decode_event_cursor(q.get("cursor")),
        limit=inputs.limit(q),
    )
    return answer.api({"hooks": store.declared_hooks(), "events": rows, "next_cursor": cursor})


async def list_alerts(request: Request, conn: tx.Conn, role: str) -> Response:
    q = request.query_params
    rows, cursor = await store.list_alerts(
        conn,
        status=inputs.text(q.get("status"), "status"),
        before_id=tx.decode_cursor(q.get("cursor")),
        limit=inputs.limit(q),
    )
    sending = request.app.state.runtime.settings.alert_webhook_url is not None
    return answer.api({"alerts": rows, "next_cursor": cursor, "sending": sending})
