"""The JSON admin API under /api/admin: each route, its handler, and what the OpenAPI document says of it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import api_input, api_ops, flow_api, job_signal, run_now, store
from crontick.admin.guard import (
    REFUSALS,
    Handler,
    answer,
    error,
    guarded_route,
    refusal,
)
from crontick.admin.operation import ApiRoute, Operation, Param
from crontick.http import mount
from crontick.jobs.queue import STATUSES

ACTION_STATUS = {"not_found": 404, "conflict": 409, "key_taken": 409}


def _not_found(job_id: object) -> Response:
    return error(404, "not_found", f"expected an existing job id, got: {str(job_id)[:40]} (no such job)")


# -- handlers -----------------------------------------------------------------------------------


async def list_jobs(request: Request, conn: store.Conn, role: str) -> Response:
    found = await api_ops.split_or_search(request, conn)  # ?status=due|scheduled, ?error= (issue 23)
    if found is not None:
        return answer({"jobs": found[0], "next_cursor": found[1]})
    q = request.query_params
    status = api_input.text(q.get("status"), "status")
    if status is not None and status not in STATUSES:
        raise api_input.BadRequest(f"status: expected one of {', '.join(STATUSES)}, got: {status!r}")
    rows, cursor = await store.list_jobs(
        conn,
        status=status,
        type=api_input.text(q.get("type"), "type"),
        payload_contains=api_input.json_object(q.get("payload"), "payload"),
        before_id=store.decode_cursor(q.get("cursor")),
        limit=api_input.limit(q),
    )
    return answer({"jobs": rows, "next_cursor": cursor})


async def get_job(request: Request, conn: store.Conn, role: str) -> Response:
    job_id = api_input.job_id(request)
    job = await store.get_job(conn, job_id) if job_id else None
    if job:
        await run_now.attempt_ticks(conn, job["history"])
    return answer(job) if job else _not_found(request.path_params["id"])


def _action(act: Callable[..., Awaitable[store.ActionResult]]) -> Handler:
    async def handler(request: Request, conn: store.Conn, role: str) -> Response:
        job_id = api_input.job_id(request)
        if job_id is None:
            return _not_found(request.path_params["id"])
        result = await act(conn, job_id, role=role)
        if not result.ok:
            return error(ACTION_STATUS[result.error or "conflict"], result.error or "conflict", result.detail)
        return answer(result.row)

    return handler


async def bulk_retry(request: Request, conn: store.Conn, role: str) -> Response:
    body = await api_input.body(request)
    status = body.get("status", "failed")
    if status not in store.RETRYABLE:
        raise api_input.BadRequest(f"status: expected one of {', '.join(store.RETRYABLE)}, got: {status!r}")
    type_ = body.get("type")
    payload = body.get("payload")
    if type_ is not None and not isinstance(type_, str) or payload is not None and not isinstance(payload, dict):
        raise api_input.BadRequest("type, payload: expected a string and a JSON object (or null)")
    max_id = body.get("max_id")
    after_id = body.get("after_id")
    for name, value in (("max_id", max_id), ("after_id", after_id)):
        if value is not None and (type(value) is not int or not 0 <= value <= api_input.MAX_ID):
            raise api_input.BadRequest(
                f"{name}: expected an integer from 0 to {api_input.MAX_ID} or null, got: {str(value)[:40]}"
            )
    if max_id is None:  # confirming now: freeze the filter at the newest job
        max_id = await store.max_job_id(conn)
    retried, skipped, next_after = await store.bulk_retry(
        conn,
        status=status,
        type=api_input.text(type_, "type"),
        payload_contains=payload,
        max_id=max_id,
        after_id=after_id,
        role=role,
    )
    return answer({"retried": retried, "skipped_key_taken": skipped, "max_id": max_id, "next_after_id": next_after})


async def signal_job(request: Request, conn: store.Conn, role: str) -> Response:
    """Durable steps: wake a waiting job by hand with the body's `payload` (crontick.admin.job_signal)."""
    job_id = api_input.job_id(request)
    if job_id is None:
        return _not_found(request.path_params["id"])
    body = await api_input.body(request)
    result = await job_signal.signal_job(conn, job_id, payload=body.get("payload"), role=role)
    if not result.ok:
        return error(ACTION_STATUS[result.error or "conflict"], result.error or "conflict", result.detail)
    return answer(result.row)


async def stats(request: Request, conn: store.Conn, role: str) -> Response:
    expected = getattr(
        request.app.state.runtime.settings, "expected_interval_seconds", store.DEFAULT_EXPECTED_INTERVAL_SECONDS
    )
    return answer(await store.stats(conn, expected_interval_seconds=expected))


async def list_reminders(request: Request, conn: store.Conn, role: str) -> Response:
    q = request.query_params
    rows, cursor = await store.list_reminders(
        conn,
        status=api_input.text(q.get("status"), "status"),
        before=store.decode_cursor(q.get("cursor")),
        limit=api_input.limit(q),
        source=request.app.state.runtime.settings.reminder_source_parts,
    )
    return answer({"reminders": rows, "next_cursor": cursor})


async def due_reminders(request: Request, conn: store.Conn, role: str) -> Response:
    limit = api_input.limit(request.query_params)
    source = request.app.state.runtime.settings.reminder_source_parts
    return answer({"bookings": await store.due_reminders(conn, limit, source)})


async def retry_reminder(request: Request, conn: store.Conn, role: str) -> Response:
    # Text: the reminder source's id, whatever its type (a uuid, a number), as reminder_sends keeps it.
    booking_id = api_input.text(request.path_params["booking_id"], "booking_id") or ""
    kind = api_input.text(request.path_params["kind"], "kind") or ""
    result = await store.retry_reminder(conn, booking_id, kind, role=role)
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
        limit=api_input.limit(q),
    )
    return answer({"ticks": rows, "next_cursor": cursor})


async def list_hooks(request: Request, conn: store.Conn, role: str) -> Response:
    from crontick.admin import hooks_alerts_store as feeds
    from crontick.admin.hooks_alerts_page import declared_hooks

    q = request.query_params
    rows, cursor = await feeds.list_events(
        conn,
        hook=api_input.text(q.get("hook"), "hook"),
        before=feeds.decode_event_cursor(q.get("cursor")),
        limit=api_input.limit(q),
    )
    return answer({"hooks": declared_hooks(), "events": rows, "next_cursor": cursor})


async def list_alerts(request: Request, conn: store.Conn, role: str) -> Response:
    from crontick.admin import hooks_alerts_store as feeds

    q = request.query_params
    rows, cursor = await feeds.list_alerts(
        conn,
        status=api_input.text(q.get("status"), "status"),
        before_id=store.decode_cursor(q.get("cursor")),
        limit=api_input.limit(q),
    )
    sending = request.app.state.runtime.settings.alert_webhook_url is not None
    return answer({"alerts": rows, "next_cursor": cursor, "sending": sending})


async def openapi(request: Request) -> Response:
    """The OpenAPI document needs a secret like every route, but no database.

    Its paths are crontick's own (`/api/admin/jobs`); under a mount prefix, `servers` names the
    prefix (`[{"url": "/ops"}]`), which OpenAPI puts in front of every path.
    """
    refused, _ = refusal(request)
    if refused is not None:
        return refused
    root = mount.prefix(request)
    return answer({**_document(), "servers": [{"url": root}]} if root else _document())


@lru_cache(maxsize=1)
def _document() -> dict[str, Any]:
    """Built on its first request: a tick's cold start, which builds these routes, never loads the schemas."""
    from crontick.admin.openapi import document

    return document(routes())


# -- routes, each with its Operation: the OpenAPI document is generated from these --------------

TEXT = {"type": "string"}
JOB_ID = (Param("id", "Id"),)
LIMIT = Param("limit", "Limit", "Rows per page.")
CURSOR = Param("cursor", TEXT, "The `next_cursor` of the previous page.")
PAYLOAD = Param(
    "payload",
    TEXT,
    'Payload containment, a JSON object: {"user_id": 42}. Searches '
    f"{store.SEARCH_WINDOW_IDS:,} ids per page; a page may be short and still have a next_cursor.",
)


def routes() -> list[ApiRoute]:
    """The JSON admin API's routes, for crontick.admin.routes() to mount and the OpenAPI document to describe."""
    return [
        guarded_route(
            "/api/admin/jobs",
            list_jobs,
            "GET",
            Operation(
                "Jobs, newest first (keyset pages)",
                ("JobPage", "A page of jobs (errors cut to 200 characters, no payloads)."),
                query=(
                    api_ops.STATUS_QUERY,
                    Param("type", TEXT, "Only this job type."),
                    PAYLOAD,
                    api_ops.ERROR_QUERY,
                    LIMIT,
                    CURSOR,
                ),
            ),
        ),
        guarded_route(
            "/api/admin/jobs/retry",
            bulk_retry,
            "POST",
            Operation(
                "Retry the next chunk (500) of the jobs a frozen filter matches",
                (
                    "BulkRetried",
                    "What this chunk did; call again with next_after_id and max_id until next_after_id is null.",
                ),
                body="BulkRetry",
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/jobs/{id}",
            get_job,
            "GET",
            Operation(
                "One job with its payload, whole error, every attempt and its durable steps",
                ("JobDetail", "The job."),
                errors=(404,),
                path=JOB_ID,
            ),
        ),
        guarded_route(
            "/api/admin/jobs/{id}/retry",
            _action(store.retry_job),
            "POST",
            Operation(
                "Run a done, failed or cancelled job again; attempts and history are kept",
                ("Job", "The job, now pending."),
                errors=(404, 409),
                path=JOB_ID,
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/jobs/{id}/cancel",
            _action(store.cancel_job),
            "POST",
            Operation(
                "Cancel a pending or waiting job", ("Job", "The job, now cancelled."), errors=(404, 409), path=JOB_ID
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/jobs/{id}/signal",
            signal_job,
            "POST",
            Operation(
                "Wake a waiting job (job.wait_for) with a payload, as crontick.signal would",
                ("Job", "The job, now pending and due."),
                errors=(404, 409),
                path=JOB_ID,
                body="Signal",
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/jobs/{id}/delete",
            _action(store.delete_job),
            "POST",
            Operation(
                "Delete a done, failed or cancelled job and its attempts",
                ("Deleted", "Deleted."),
                errors=(404, 409),
                path=JOB_ID,
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/stats",
            stats,
            "GET",
            Operation(
                "Capped counts per status, oldest due job, scheduler staleness, hourly done/failed",
                ("Stats", "The numbers."),
            ),
        ),
        guarded_route(
            "/api/admin/reminders",
            list_reminders,
            "GET",
            Operation(
                "The reminder send log, newest first",
                ("ReminderPage", "A page of sends."),
                query=(Param("status", "ReminderStatus", "Only this status."), LIMIT, CURSOR),
            ),
        ),
        guarded_route(
            "/api/admin/reminders/due",
            due_reminders,
            "GET",
            Operation(
                "Confirmed bookings starting in the next 24 hours, with their sends",
                ("DueBookings", "Soonest first."),
                query=(LIMIT,),
            ),
        ),
        guarded_route(
            "/api/admin/reminders/{booking_id}/{kind}/retry",
            retry_reminder,
            "POST",
            Operation(
                "Send a failed or unknown reminder again (check the provider first)",
                ("Reminder", "The send, due again now."),
                errors=(404, 409),
                path=(Param("booking_id", TEXT), Param("kind", TEXT)),
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/ticks",
            list_ticks,
            "GET",
            Operation(
                "Recent ticks, with the gap since the one before (flagged over 2x the expected interval)",
                ("TickPage", "A page of ticks."),
                query=(LIMIT, CURSOR),
            ),
        ),
        guarded_route(
            "/api/admin/hooks",
            list_hooks,
            "GET",
            Operation(
                "The declared inbound hooks (never their secrets) and recorded events, newest first",
                ("HookPage", "The hooks and a page of events."),
                query=(Param("hook", TEXT, "Only this hook's events."), LIMIT, CURSOR),
            ),
        ),
        guarded_route(
            "/api/admin/alerts",
            list_alerts,
            "GET",
            Operation(
                "The alert outbox, newest first (errors cut to 200 characters, no bodies)",
                ("AlertPage", "A page of alerts."),
                query=(Param("status", "AlertStatus", "Only this status."), LIMIT, CURSOR),
            ),
        ),
        *api_ops.routes(),
        *flow_api.routes(LIMIT, CURSOR),  # flow control: pauses, groups, rate limits
        ApiRoute(
            "/api/admin/openapi.json",
            openapi,
            "GET",
            Operation("This document", ({"type": "object"}, "OpenAPI 3.1"), errors=REFUSALS),
        ),
    ]
