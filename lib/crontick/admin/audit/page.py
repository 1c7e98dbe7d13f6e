"""The Audit page: the admin's actions, newest first."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import gate
from crontick.admin.audit import store
from crontick.admin.view import PAGE_ROWS, View


async def audit(request: Request) -> Response:
    async def build(view: View) -> Response:
        before = view.cursor()
        found = await view.panel(lambda tx: store.entries(tx, before_id=before, limit=PAGE_ROWS))
        rows, next_cursor = found if found is not None else (None, None)
        return view.page("audit.html", {"entries": rows, "next_cursor": next_cursor}, title="Audit", nav="audit")

    return await gate.page(request, build)
