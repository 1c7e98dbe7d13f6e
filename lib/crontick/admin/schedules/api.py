"""The schedules under /api/admin/schedules/{name}: enqueue now, pause and resume."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import answer, inputs, tx
from crontick.admin.schedules import store

NAME_MAX_CHARS = 200


async def _act(
    request: Request, conn: tx.Conn, role: str, act: Callable[..., Awaitable[tx.ActionResult]], *, kick: bool = False
) -> Response:
    name = inputs.text(request.path_params["name"], "name") or ""
    if len(name) > NAME_MAX_CHARS:
        return answer.error(
            request, 404, "not_found", f"expected a schedule name of at most {NAME_MAX_CHARS} characters"
        )
    return answer.action(request, await act(conn, name, role=role), kick=kick)


async def enqueue(request: Request, conn: tx.Conn, role: str) -> Response:
    return await _act(request, conn, role, store.enqueue_now, kick=True)  # run now: its job is due now


async def pause(request: Request, conn: tx.Conn, role: str) -> Response:
    return await _act(request, conn, role, store.pause)


async def resume(request: Request, conn: tx.Conn, role: str) -> Response:
    return await _act(request, conn, role, store.resume)
