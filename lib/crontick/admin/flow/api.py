"""Flow control under /api/admin (issue 20): pause and resume a type, a group or a rate limit; the groups that wait
and why; each rate limit's use; a group's pending jobs cancelled or failed in chunks."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import answer, inputs, tx
from crontick.admin.flow import SEGMENTS, store


async def list_groups(request: Request, conn: tx.Conn, role: str) -> Response:
    q = request.query_params
    limit = inputs.limit(q)
    given = q.get("cursor")  # the last group_key of a page
    after = inputs.flow_name(given, "cursor") if given else None
    rows, cursor = await store.groups(conn, after=after, limit=limit)
    return answer.api({"groups": rows, "next_cursor": cursor})


async def list_rate_limits(request: Request, conn: tx.Conn, role: str) -> Response:
    return answer.api({"rate_limits": await store.rate_limits(conn)})


async def list_pauses(request: Request, conn: tx.Conn, role: str) -> Response:
    return answer.api({"pauses": await store.pauses(conn)})


async def pause(request: Request, conn: tx.Conn, role: str) -> Response:
    """POST /api/admin/<types|groups|rate-limits>/{name}/pause."""
    kind, name = _named(request)
    return answer.action(request, await store.pause(conn, kind, name, role=role))


async def resume(request: Request, conn: tx.Conn, role: str) -> Response:
    kind, name = _named(request)
    # What the pause held back is due again: a tick now runs it (or books its wake-up), since none was booked for it.
    return answer.action(request, await store.resume(conn, kind, name, role=role), kick=True)


def _named(request: Request) -> tuple[str, str]:
    """(kind, name) of the route's one path parameter: `type`, `group_key` or `name` (a rate limit)."""
    for param, kind in SEGMENTS.values():
        if param in request.path_params:
            return kind, inputs.flow_name(request.path_params[param], param)
    raise inputs.BadRequest("expected a type, group or rate limit by name")


async def cancel(request: Request, conn: tx.Conn, role: str) -> Response:
    name = inputs.flow_name(request.path_params["group_key"], "group_key")
    return answer.action(request, await store.end_group(conn, name, "cancel", role=role))


async def fail(request: Request, conn: tx.Conn, role: str) -> Response:
    name = inputs.flow_name(request.path_params["group_key"], "group_key")
    return answer.action(request, await store.end_group(conn, name, "fail", role=role))
