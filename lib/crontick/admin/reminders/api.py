"""The reminders under /api/admin/reminders: the send log, the bookings due soon, and a send's retry."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import answer, inputs, tx
from crontick.admin.reminders import store


async def list_reminders(request: Request, conn: tx.Conn, role: str) -> Response:
    q = request.query_params
    rows, cursor = await store.list_reminders(
        conn,
        status=inputs.text(q.get("status"), "status"),
        before=tx.decode_cursor(q.get("cursor")),
        limit=inputs.limit(q),
        source=request.app.state.runtime.settings.reminder_source_parts,
    )
    return answer.api({"reminders": rows, "next_cursor": cursor})


async def due_reminders(request: Request, conn: tx.Conn, role: str) -> Response:
    limit = inputs.limit(request.query_params)
    source = request.app.state.runtime.settings.reminder_source_parts
    return answer.api({"bookings": await store.due_reminders(conn, limit, source)})


async def retry_reminder(request: Request, conn: tx.Conn, role: str) -> Response:
    # Text: the reminder source's id, whatever its type (a uuid, a number), as reminder_sends keeps it.
    booking_id = inputs.text(request.path_params["booking_id"], "booking_id") or ""
    kind = inputs.text(request.path_params["kind"], "kind") or ""
    return answer.action(request, await store.retry_reminder(conn, booking_id, kind, role=role))
