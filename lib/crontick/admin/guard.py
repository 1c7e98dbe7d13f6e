"""What stands in front of every JSON admin API route: the bearer roles, the admin's connection, JSON answers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from crontick import logs
from crontick.admin import bearer, store
from crontick.admin.operation import ApiRoute, Operation
from crontick.errors import CrontickError, DatabaseUnavailable, QueryTimeout
from crontick.http.body import misconfigured_body

RETRY_AFTER_SECONDS = 30
# The statuses refusal() answers on any route (closed, unauthorised), and on an action (a viewer).
REFUSALS = (401, 503)
WRITE_REFUSALS = (403,)
# What guarded() adds: 400 for a CrontickError or data PostgreSQL cannot store, 503 for the database.
GUARDED = (400, *REFUSALS)


class ApiResponse(JSONResponse):
    """JSON with datetimes as ISO-8601, never cached (admin data is live and private)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, default=_plain, ensure_ascii=False, separators=(",", ":")).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"expected a JSON value, got: {type(value).__name__}")


def answer(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return ApiResponse(body, status, headers={"Cache-Control": "no-store", **(headers or {})})


def error(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Response:
    return answer({"error": code, "detail": detail}, status, headers)


Handler = Callable[[Request, store.Conn, str], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]


def refusal(request: Request, *, write: bool = False) -> tuple[Response | None, str]:
    """(a JSON refusal, or None and the caller's role): closed, unauthorised, or a viewer acting."""
    settings = request.app.state.runtime.settings
    if "admin" not in settings.admin_roles:  # unset, or equal to CRON_SECRET: closed
        return error(
            503,
            "admin_not_configured",
            "the admin is closed: set CRONTICK_ADMIN_SECRET (32+ characters, not CRON_SECRET) to open it",
        ), ""
    role = bearer.role(request.headers.get("authorization"), settings)
    if role is None:
        return error(
            401,
            "unauthorized",
            "send Authorization: Bearer <CRONTICK_ADMIN_SECRET> (or the viewer secret for reads)",
            {"WWW-Authenticate": 'Bearer realm="crontick admin"'},
        ), ""
    if write and role != "admin":
        return error(403, "read_only", "the viewer secret can read but not act; use CRONTICK_ADMIN_SECRET"), role
    return None, role


def guarded(handler: Handler, *, write: bool = False) -> Endpoint:
    """Auth, then the handler on the admin's connection; every refusal and failure answers JSON."""

    async def endpoint(request: Request) -> Response:
        refused, role = refusal(request, write=write)
        if refused is not None:
            return refused
        rt = request.app.state.runtime
        if rt.problem or not rt.settings.database_url:
            return error(503, "misconfigured", misconfigured_body()["detail"])  # detail in the log only
        try:
            async with store.connection(rt.settings.database_url) as conn:
                return await handler(request, conn, role)
        except QueryTimeout as exc:
            return error(503, "unavailable", str(exc), {"Retry-After": "5"})
        except DatabaseUnavailable as exc:
            logs.error("admin_database_unavailable", path=request.url.path, detail=str(exc))
            return error(
                503,
                "database_unavailable",
                "the database cannot be reached; try again later",
                {"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        except psycopg.DataError as exc:  # e.g. a NUL character, which PostgreSQL text cannot hold
            return error(400, "bad_request", f"expected values PostgreSQL can store, got: {type(exc).__name__}")
        except CrontickError as exc:  # BadRequest, BadCursor, and the store's own argument checks
            return error(400, "bad_request", str(exc))

    return endpoint


def guarded_route(path: str, handler: Handler, method: str, doc: Operation, *, write: bool = False) -> ApiRoute:
    """A JSON API route behind guarded(), whose Operation also lists what the guard answers (every
    admin API module builds its routes with it, so the OpenAPI document lists the same refusals)."""
    answers = (*GUARDED, *WRITE_REFUSALS) if write else GUARDED
    return ApiRoute(path, guarded(handler, write=write), method, doc.answering(*answers))
