"""The JSON admin API's second round (issue 23): run now, per-type figures, the audit log and the schedules'
actions, each route with its Operation (crontick.admin.api mounts them with its own)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import api_input, audit_log, figures, run_now, schedule_control, store
from crontick.admin.guard import Handler, answer, error, guarded_route
from crontick.admin.operation import ApiRoute, Operation, Param

ACTION_STATUS = {"not_found": 404, "conflict": 409, "key_taken": 409}
NAME_MAX_CHARS = 200


async def split_or_search(request: Request, conn: store.Conn) -> tuple[list[Any], Any] | None:
    """GET /api/admin/jobs with ?status=due|scheduled (pending, split on run_after) or ?error= (failed jobs
    by error text): that page, or None for crontick.admin.api.list_jobs to answer the other filters."""
    q = request.query_params
    status = api_input.text(q.get("status"), "status")
    text = api_input.text(q.get("error"), "error")
    if not text and status not in run_now.PENDING_SPLIT:
        return None
    if q.get("payload"):
        raise api_input.BadRequest("payload: expected no payload filter with error= or status=due|scheduled")
    kind = api_input.text(q.get("type"), "type")
    before, limit = store.decode_cursor(q.get("cursor")), api_input.limit(q)
    if text:
        if status not in (None, "failed"):
            raise api_input.BadRequest(f"status: expected failed (or none) with error=, got: {status!r}")
        return await run_now.search_errors(conn, text, type=kind, before_id=before, limit=limit)
    return await run_now.list_pending(conn, split=status or "", type=kind, before_id=before, limit=limit)


async def list_types(request: Request, conn: store.Conn, role: str) -> Response:
    return answer({"types": await figures.type_figures(conn)})


async def list_audit(request: Request, conn: store.Conn, role: str) -> Response:
    q = request.query_params
    rows, cursor = await audit_log.list_audit(
        conn, before_id=store.decode_cursor(q.get("cursor")), limit=api_input.limit(q)
    )
    return answer({"entries": rows, "next_cursor": cursor})


async def run_job_now(request: Request, conn: store.Conn, role: str) -> Response:
    job_id = api_input.job_id(request)
    if job_id is None:
        shown = str(request.path_params["id"])[:40]
        return error(404, "not_found", f"expected an existing job id, got: {shown} (no such job)")
    return _answer(await run_now.run_now_job(conn, job_id, role=role))


async def bulk_run_now(request: Request, conn: store.Conn, role: str) -> Response:
    body = await api_input.body(request)
    type_ = body.get("type")
    payload = body.get("payload")
    if type_ is not None and not isinstance(type_, str) or payload is not None and not isinstance(payload, dict):
        raise api_input.BadRequest("type, payload: expected a string and a JSON object (or null)")
    max_id, after_id = body.get("max_id"), body.get("after_id")
    for name, value in (("max_id", max_id), ("after_id", after_id)):
        if value is not None and (type(value) is not int or not 0 <= value <= api_input.MAX_ID):
            raise api_input.BadRequest(
                f"{name}: expected an integer from 0 to {api_input.MAX_ID} or null, got: {str(value)[:40]}"
            )
    if max_id is None:  # confirming now: freeze the filter at the newest job
        max_id = await store.max_job_id(conn)
    moved, next_after = await run_now.bulk_run_now(
        conn,
        type=api_input.text(type_, "type"),
        payload_contains=payload,
        max_id=max_id,
        after_id=after_id,
        role=role,
    )
    return answer({"moved": moved, "max_id": max_id, "next_after_id": next_after})


def _schedule_action(act: Callable[..., Awaitable[store.ActionResult]]) -> Handler:
    async def handler(request: Request, conn: store.Conn, role: str) -> Response:
        name = api_input.text(request.path_params["name"], "name") or ""
        if len(name) > NAME_MAX_CHARS:
            return error(404, "not_found", f"expected a schedule name of at most {NAME_MAX_CHARS} characters")
        return _answer(await act(conn, name, role=role))

    return handler


def _answer(result: store.ActionResult) -> Response:
    if not result.ok:
        return error(ACTION_STATUS[result.error or "conflict"], result.error or "conflict", result.detail)
    return answer(result.row)


# -- routes -------------------------------------------------------------------------------------

TEXT = {"type": "string"}
SCHEDULE = (Param("name", TEXT),)
# GET /api/admin/jobs's parameters of this round (crontick.admin.api declares the route).
STATUS_QUERY = Param(
    "status", "JobFilterStatus", "Only this status; `due` and `scheduled` split `pending` on run_after (now, later)."
)
ERROR_QUERY = Param(
    "error",
    TEXT,
    "Failed jobs whose last error contains this text (case ignored, at most 200 characters). Reads the newest"
    f" {run_now.ERROR_WINDOW_JOBS:,} failed jobs below the cursor per page; a page may be short and still have"
    " a next_cursor.",
)


def routes() -> list[ApiRoute]:
    """The routes of this round, for crontick.admin.api.routes() (and so the OpenAPI document)."""
    return [
        guarded_route(
            "/api/admin/jobs/run-now",
            bulk_run_now,
            "POST",
            Operation(
                "Make due now the next chunk (500) of scheduled jobs (pending, due later) a frozen filter matches",
                (
                    "BulkRunNow",
                    "What this chunk did; call again with next_after_id and max_id until next_after_id is null.",
                ),
                body="BulkRunNowFilter",
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/jobs/{id}/run-now",
            run_job_now,
            "POST",
            Operation(
                "Make a pending job due now; its attempts are untouched",
                ("Job", "The job, due now."),
                errors=(404, 409),
                path=(Param("id", "Id"),),
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/types",
            list_types,
            "GET",
            Operation(
                "Per job type: done and failed in the last hour and 24 hours, p50/p95 duration, oldest due job,"
                " paused; worst first",
                ("TypeFigures", "Every type seen in 24 hours, with pending jobs, or paused."),
            ),
        ),
        guarded_route(
            "/api/admin/audit",
            list_audit,
            "GET",
            Operation(
                "The audit log of admin actions, newest first (keyset pages)",
                ("AuditPage", "A page of entries."),
                query=(Param("limit", "Limit", "Rows per page."), Param("cursor", TEXT, "The previous next_cursor.")),
            ),
        ),
        guarded_route(
            "/api/admin/schedules/{name}/enqueue",
            _schedule_action(schedule_control.enqueue_now),
            "POST",
            Operation(
                "Enqueue one job of the schedule now, outside its slots (a manual run; it takes no slot)",
                ("ScheduleEnqueued", "The new job."),
                errors=(404,),
                path=SCHEDULE,
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/schedules/{name}/pause",
            _schedule_action(schedule_control.pause),
            "POST",
            Operation(
                "Pause the schedule: it enqueues nothing and records its slots as skipped (paused)",
                ("SchedulePause", "Paused."),
                errors=(404,),
                path=SCHEDULE,
            ),
            write=True,
        ),
        guarded_route(
            "/api/admin/schedules/{name}/resume",
            _schedule_action(schedule_control.resume),
            "POST",
            Operation(
                "Resume the schedule; the slots that came due while paused stay skipped (paused)",
                ("SchedulePause", "Resumed."),
                errors=(404,),
                path=SCHEDULE,
            ),
            write=True,
        ),
    ]
