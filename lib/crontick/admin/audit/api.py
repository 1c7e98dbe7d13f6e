"""GET /api/admin/audit: the audit log, newest first (keyset pages)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import answer, inputs, tx
from crontick.admin.audit import store


async def list_audit(request: Request, conn: tx.Conn, role: str) -> Response:
    q = request.query_params
    rows, cursor = await store.entries(conn, before_id=tx.decode_cursor(q.get("cursor")), limit=inputs.limit(q))
    return answer.api({"entries": rows, "next_cursor": cursor})
