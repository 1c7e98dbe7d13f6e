"""The JSON admin API under /api/admin: bearer roles, keyset lists, actions that answer 404/409 in JSON."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import logs
from ..errors import CrontickError, DatabaseUnavailable, QueryTimeout
from ..http_body import misconfigured_body
from ..queue import STATUSES
from . import bearer, store

RETRY_AFTER_SECONDS = 30
MAX_BODY_BYTES = 64 * 1024
MAX_ID = 2**63 - 1
ACTION_STATUS = {"not_found": 404, "conflict": 409, "key_taken": 409}


class BadRequest(CrontickError):
    """A query parameter, path segment or body the API cannot use; answered 400."""


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


def refusal(request: Request, *, write: bool = False) -> tuple[Response | None, str]:
    """(a JSON refusal, or None and the caller's role): closed, unauthorised, or a viewer acting."""
    settings = request.app.state.runtime.settings
    if not settings.admin_secret:
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


def guarded(handler: Handler, *, write: bool = False) -> Callable[[Request], Awaitable[Response]]:
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


# -- parameters ---------------------------------------------------------------------------------


def _int(text: str | None, name: str, *, default: int | None = None, low: int = 1, high: int = MAX_ID) -> int | None:
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer from {low} to {high}, got: {text[:40]!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name}: expected an integer from {low} to {high}, got: {value}")
    return value


def _text(text: str | None, name: str) -> str | None:
    if text is None or text == "":
        return None
    if "\x00" in text or len(text) > 200:
        raise BadRequest(f"{name}: expected text up to 200 characters without NUL, got: {text[:40]!r}")
    return text


def _object(text: str | None, name: str) -> dict[str, Any] | None:
    if text is None or text == "":
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise BadRequest(f'{name}: expected a JSON object such as {{"user_id": 42}}, got: {text[:40]!r}') from None
    if not isinstance(value, dict):
        raise BadRequest(f'{name}: expected a JSON object such as {{"user_id": 42}}, got: {text[:40]!r}')
    return value


def _job_id(request: Request) -> int | None:
    """The {id} path segment, or None (a 404) if it cannot be a job id."""
    text = request.path_params["id"]
    return int(text) if text.isascii() and text.isdigit() and 0 < int(text) <= MAX_ID else None


def _not_found(job_id: object) -> Response:
    return error(404, "not_found", f"expected an existing job id, got: {str(job_id)[:40]} (no such job)")


async def _body(request: Request) -> dict[str, Any]:
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY_BYTES:
            raise BadRequest(f"body: expected at most {MAX_BODY_BYTES} bytes of JSON, got more")
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        raise BadRequest("body: expected a JSON object, got text that is not JSON") from None
    if not isinstance(value, dict):
        raise BadRequest(f"body: expected a JSON object, got: {type(value).__name__}")
    return value


# -- routes -------------------------------------------------------------------------------------


async def list_jobs(request: Request, conn: store.Conn, role: str) -> Response:
    q = request.query_params
    status = _text(q.get("status"), "status")
    if status is not None and status not in STATUSES:
        raise BadRequest(f"status: expected one of {', '.join(STATUSES)}, got: {status!r}")
    rows, cursor = await store.list_jobs(
        conn,
        status=status,
        type=_text(q.get("type"), "type"),
        payload_contains=_object(q.get("payload"), "payload"),
        before_id=store.decode_cursor(q.get("cursor")),
        limit=_int(q.get("limit"), "limit", default=50, high=store.MAX_LIMIT) or 50,
    )
    return answer({"jobs": rows, "next_cursor": cursor})


async def get_job(request: Request, conn: store.Conn, role: str) -> Response:
    job_id = _job_id(request)
    job = await store.get_job(conn, job_id) if job_id else None
    return answer(job) if job else _not_found(request.path_params["id"])


def _action(act: Callable[..., Awaitable[store.ActionResult]]) -> Handler:
    async def handler(request: Request, conn: store.Conn, role: str) -> Response:
        job_id = _job_id(request)
        if job_id is None:
            return _not_found(request.path_params["id"])
        result = await act(conn, job_id, role=role)
        if not result.ok:
            return error(ACTION_STATUS[result.error or "conflict"], result.error or "conflict", result.detail)
        return answer(result.row)

    return handler


async def bulk_retry(request: Request, conn: store.Conn, role: str) -> Response:
    body = await _body(request)
    status = body.get("status", "failed")
    if status not in store.RETRYABLE:
        raise BadRequest(f"status: expected one of {', '.join(store.RETRYABLE)}, got: {status!r}")
    type_ = body.get("type")
    payload = body.get("payload")
    if type_ is not None and not isinstance(type_, str) or payload is not None and not isinstance(payload, dict):
        raise BadRequest("type, payload: expected a string and a JSON object (or null)")
    max_id = body.get("max_id")
    after_id = body.get("after_id")
    for name, value in (("max_id", max_id), ("after_id", after_id)):
        if value is not None and (type(value) is not int or not 0 <= value <= MAX_ID):
            raise BadRequest(f"{name}: expected an integer from 0 to {MAX_ID} or null, got: {str(value)[:40]}")
    if max_id is None:  # confirming now: freeze the filter at the newest job
        max_id = await store.max_job_id(conn)
    retried, skipped, next_after = await store.bulk_retry(
        conn,
        status=status,
        type=_text(type_, "type"),
        payload_contains=payload,
        max_id=max_id,
        after_id=after_id,
        role=role,
    )
    return answer({"retried": retried, "skipped_key_taken": skipped, "max_id": max_id, "next_after_id": next_after})


async def stats(request: Request, conn: store.Conn, role: str) -> Response:
    expected = getattr(
        request.app.state.runtime.settings, "expected_interval_seconds", store.DEFAULT_EXPECTED_INTERVAL_SECONDS
    )
    return answer(await store.stats(conn, expected_interval_seconds=expected))


async def list_reminders(request: Request, conn: store.Conn, role: str) -> Response:
    q = request.query_params
    rows, cursor = await store.list_reminders(
        conn,
        status=_text(q.get("status"), "status"),
        before=store.decode_cursor(q.get("cursor")),
        limit=_int(q.get("limit"), "limit", default=50, high=store.MAX_LIMIT) or 50,
    )
    return answer({"reminders": rows, "next_cursor": cursor})


async def due_reminders(request: Request, conn: store.Conn, role: str) -> Response:
    limit = _int(request.query_params.get("limit"), "limit", default=50, high=store.MAX_LIMIT) or 50
    return answer({"bookings": await store.due_reminders(conn, limit)})


async def retry_reminder(request: Request, conn: store.Conn, role: str) -> Response:
    booking_id = _int(request.path_params["booking_id"], "booking_id")
    kind = _text(request.path_params["kind"], "kind") or ""
    result = await store.retry_reminder(conn, booking_id or 0, kind, role=role)
    if not result.ok:
        return error(ACTION_STATUS[result.error or "conflict"], result.error or "conflict", result.detail)
    return answer(result.row)


async def list_ticks(request: Request, conn: store.Conn, role: str) -> Response:
    q = request.query_params
    expected = getattr(
        request.app.state.runtime.settings, "expected_interval_seconds", store.DEFAULT_EXPECTED_INTERVAL_SECONDS
    )
    rows, cursor = await store.list_ticks(
        conn,
        before_id=store.decode_cursor(q.get("cursor")),
        expected_interval_seconds=expected,
        limit=_int(q.get("limit"), "limit", default=50, high=store.MAX_LIMIT) or 50,
    )
    return answer({"ticks": rows, "next_cursor": cursor})


async def list_hooks(request: Request, conn: store.Conn, role: str) -> Response:
    from . import hooks_alerts_store as feeds
    from .hooks_alerts_page import declared_hooks

    q = request.query_params
    rows, cursor = await feeds.list_events(
        conn,
        hook=_text(q.get("hook"), "hook"),
        before=feeds.decode_event_cursor(q.get("cursor")),
        limit=_int(q.get("limit"), "limit", default=50, high=store.MAX_LIMIT) or 50,
    )
    return answer({"hooks": declared_hooks(), "events": rows, "next_cursor": cursor})


async def list_alerts(request: Request, conn: store.Conn, role: str) -> Response:
    from . import hooks_alerts_store as feeds

    q = request.query_params
    rows, cursor = await feeds.list_alerts(
        conn,
        status=_text(q.get("status"), "status"),
        before_id=store.decode_cursor(q.get("cursor")),
        limit=_int(q.get("limit"), "limit", default=50, high=store.MAX_LIMIT) or 50,
    )
    sending = request.app.state.runtime.settings.alert_webhook_url is not None
    return answer({"alerts": rows, "next_cursor": cursor, "sending": sending})


async def openapi(request: Request) -> Response:
    """The OpenAPI document needs a secret like every route, but no database."""
    refused, _ = refusal(request)
    if refused is not None:
        return refused
    from .openapi import document

    return answer(document())


def routes() -> list[Route]:
    """The JSON admin API's routes, for crontick.admin.routes() to mount."""
    return [
        Route("/api/admin/jobs", guarded(list_jobs), methods=["GET"]),
        Route("/api/admin/jobs/retry", guarded(bulk_retry, write=True), methods=["POST"]),
        Route("/api/admin/jobs/{id}", guarded(get_job), methods=["GET"]),
        Route("/api/admin/jobs/{id}/retry", guarded(_action(store.retry_job), write=True), methods=["POST"]),
        Route("/api/admin/jobs/{id}/cancel", guarded(_action(store.cancel_job), write=True), methods=["POST"]),
        Route("/api/admin/jobs/{id}/delete", guarded(_action(store.delete_job), write=True), methods=["POST"]),
        Route("/api/admin/stats", guarded(stats), methods=["GET"]),
        Route("/api/admin/reminders", guarded(list_reminders), methods=["GET"]),
        Route("/api/admin/reminders/due", guarded(due_reminders), methods=["GET"]),
        Route("/api/admin/reminders/{booking_id}/{kind}/retry", guarded(retry_reminder, write=True), methods=["POST"]),
        Route("/api/admin/ticks", guarded(list_ticks), methods=["GET"]),
        Route("/api/admin/hooks", guarded(list_hooks), methods=["GET"]),
        Route("/api/admin/alerts", guarded(list_alerts), methods=["GET"]),
        Route("/api/admin/openapi.json", openapi, methods=["GET"]),
    ]
