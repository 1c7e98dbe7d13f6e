"""The jobs' pages: Failed (the landing page), Jobs (filters, the due/scheduled split, the error search) and Job, and one
job's actions (retry, cancel, delete, run now), each behind a confirmation and a 303."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from crontick.admin import gate, inputs, params
from crontick.admin.answer import error, finish, kicking
from crontick.admin.jobs import ERROR_TEXT_MAX_CHARS, ERROR_WINDOW_JOBS, PENDING_SPLIT, search, store
from crontick.admin.params import BadParameter
from crontick.admin.reminders.store import list_reminders
from crontick.admin.return_to import safe_back
from crontick.admin.view import PAGE_ROWS, View
from crontick.http import mount
from crontick.jobs.queue import STATUSES

PAYLOAD_MAX_CHARS = 4096
# The status filter's choices: `pending` also split on run_after into due (now) and scheduled (later).
FILTER_STATUSES = (*STATUSES, *PENDING_SPLIT)
VERBS = {
    "retry": ("Retry", "primary", "run it again (it keeps its attempt history and gets at least one more attempt)"),
    "cancel": ("Cancel job", "danger", "cancel it: it will not run (a running job stops at its next step)"),
    "delete": ("Delete job", "danger", "delete it and its attempt history for good"),
    "run-now": ("Run now", "primary", "make it due now (its attempts are untouched)"),
}
ACTS = {"retry": store.retry_job, "cancel": store.cancel_job, "delete": store.delete_job, "run-now": store.run_now_job}
DONE = {"retry": "is pending again", "cancel": "is cancelled", "delete": "is deleted", "run-now": "is due now"}
# The actions that make their job due now: a tick starts once they are answered (crontick.admin.answer.kicking).
KICKS = frozenset({"retry", "run-now"})
# A running job is not cancelled at once: it is asked to stop, and ends cancelled at its next step.
ASKED = "is asked to stop: it ends cancelled at its next step"


async def failed(request: Request) -> Response:
    async def build(view: View) -> Response:
        before = view.cursor()
        jobs = await view.panel(lambda tx: store.list_jobs(tx, status="failed", before_id=before, limit=PAGE_ROWS))

        async def both(conn: Any) -> list[dict[str, Any]]:
            source = view.settings.reminder_source_parts
            failed_rows, _ = await list_reminders(conn, status="failed", limit=PAGE_ROWS, source=source)
            unknown_rows, _ = await list_reminders(conn, status="unknown", limit=PAGE_ROWS, source=source)
            return sorted([*failed_rows, *unknown_rows], key=lambda r: int(r["id"]), reverse=True)

        reminders = await view.panel(both)
        rows, next_cursor = jobs if jobs is not None else (None, None)
        return view.page(
            "failed.html",
            {"jobs": rows, "next_cursor": next_cursor, "reminders": reminders},
            title="Failed",
            nav="failed",
        )

    return await gate.page(request, build)


def _job_filters(view: View) -> tuple[dict[str, str], Any, str | None]:
    """The filters from the URL, the payload as JSON, and a message when the payload is not JSON."""
    q = view.request.query_params
    filters = {
        "status": q.get("status", ""),
        "type": params.text(q.get("type"), "type"),
        "payload": params.text(q.get("payload"), "payload", max_chars=PAYLOAD_MAX_CHARS),
        "error": params.text(q.get("error"), "error", max_chars=ERROR_TEXT_MAX_CHARS),
    }
    contains, problem = parse_payload(filters["payload"])
    if filters["status"] and filters["status"] not in FILTER_STATUSES:
        problem = f"Unknown status {filters['status']!r}: expected one of {', '.join(FILTER_STATUSES)}."
        filters["status"] = ""
    split = filters["status"] in PENDING_SPLIT
    if (filters["error"] or split) and filters["payload"]:
        problem = "The payload filter works with the plain statuses; clear it to search errors or split pending."
    if filters["error"] and filters["status"] not in ("", "failed"):
        problem = "The error search reads failed jobs: choose status failed (or any)."
    return filters, contains, problem


def parse_payload(text: str) -> tuple[Any, str | None]:
    """The payload filter as a JSON object jsonb can take (see params.json_object), or a message."""
    if not text:
        return None, None
    try:
        value = json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        return None, f'The payload filter must be JSON, such as {{"user_id": 42}}: {exc.msg} at character {exc.pos}.'
    except RecursionError:
        return None, f"The payload filter must be JSON nested at most {params.JSON_MAX_DEPTH} levels deep."
    except ValueError as exc:  # NaN or Infinity, or an integer of more than 4,300 digits
        return None, f'The payload filter must be JSON, such as {{"user_id": 42}}: {exc}.'
    if not isinstance(value, dict):
        return None, 'The payload filter must be a JSON object, such as {"user_id": 42}.'
    try:
        params.check_json(value, "payload")
    except BadParameter as exc:
        return None, f"The payload filter cannot be stored by PostgreSQL: {exc}."
    return value, None


def _not_json(name: str) -> Any:
    raise ValueError(f"expected JSON, got: {name} (not a JSON number)")


async def _job_rows(view: View, filters: dict[str, str], contains: Any) -> tuple[list[Any], str | None] | None:
    """The Jobs page's rows for its (valid) filters: the error search, a half of pending, or the plain list."""
    before = view.cursor()
    kind = filters["type"] or None
    if filters["error"]:
        return await view.panel(
            lambda tx: search.search_errors(tx, filters["error"], type=kind, before_id=before, limit=PAGE_ROWS)
        )
    if filters["status"] in PENDING_SPLIT:
        split = filters["status"]
        return await view.panel(
            lambda tx: search.list_pending(tx, split=split, type=kind, before_id=before, limit=PAGE_ROWS)
        )
    return await view.panel(
        lambda tx: store.list_jobs(
            tx,
            status=filters["status"] or None,
            type=kind,
            payload_contains=contains,
            before_id=before,
            limit=PAGE_ROWS,
        )
    )


async def jobs(request: Request) -> Response:
    async def build(view: View) -> Response:
        jump = view.request.query_params.get("id", "").strip().lstrip("#")
        if jump:
            target = params.row_id(jump)
            if target is None:
                return error(view.request, 400, "bad_id", f"expected a job id (digits), got: {params.shown(jump)}")
            return finish(RedirectResponse(view.link(f"/admin/jobs/{target}"), 303), view.request)
        filters, contains, problem = _job_filters(view)
        result = await _job_rows(view, filters, contains) if problem is None else None
        rows, next_cursor = result if result is not None else (None if problem is None else [], None)
        data = {
            "jobs": rows,
            "next_cursor": next_cursor,
            "filters": filters,
            "problem": problem,
            "statuses": FILTER_STATUSES,
            "error_window": ERROR_WINDOW_JOBS,
        }
        return view.page("jobs.html", data, title="Jobs", nav="jobs", status=400 if problem else 200)

    return await gate.page(request, build)


async def job(request: Request) -> Response:
    text = request.path_params["id"]

    async def build(view: View) -> Response:
        job_id = params.row_id(text)
        if job_id is None:
            return error(view.request, 404, "job_not_found", f"expected a job id, got: {params.shown(text)}")

        async def read(tx: Any) -> Any:
            found = await store.get_job(tx, job_id)
            if found is not None:
                await store.attempt_ticks(tx, found["history"])  # the tick of each attempt (issue 23)
            return found

        row = await view.panel(read)
        if row is None:
            return error(
                view.request,
                404,
                "job_not_found",
                f"expected a job with id {job_id}, got none (it may have been deleted)",
            )
        back = view.link("/admin/jobs", status=row.get("status"), type=row.get("type"))
        context = {
            "job": row,
            "back": back,
            "reply_age_minutes": reply_age_minutes(row, datetime.now(UTC)),
            "payload_schema": payload_schema(row["type"]),
        }
        return view.page("job.html", context, title=f"Job #{job_id}", nav="jobs")

    return await gate.page(request, build)


async def job_action(request: Request) -> Response:
    """POST /admin/jobs/{id}/{verb}: confirm, then retry, cancel, delete or run the job now."""
    found = params.row_id(request.path_params["id"])
    verb = request.path_params["verb"]
    if found is None:
        return error(
            request, 404, "job_not_found", f"expected a job id, got: {params.shown(request.path_params['id'])}"
        )
    job_id = found
    if verb not in VERBS:
        return error(
            request,
            404,
            "not_found",
            f"expected one of {', '.join(VERBS)} after {mount.url(request, f'/admin/jobs/{job_id}/')}, "
            f"got: {params.shown(verb)}",
        )

    async def act(view: View) -> Response:
        fields = await inputs.form(view.request)
        back = safe_back(view.request, fields.get("back"), f"/admin/jobs/{job_id}")
        label, style, what = VERBS[verb]
        if fields.get("confirm") != "yes":
            return view.confirm(
                heading=f"{label.removesuffix(' job')} job #{job_id}?",  # "Cancel job #7?", not "Cancel job job #7?"
                question=f"This will {what}.",
                action_url=view.url(f"/admin/jobs/{job_id}/{verb}"),
                fields={"back": back},
                button=label,
                button_class=style,
                back=back,
            )
        async with view.connection() as conn:
            result = await ACTS[verb](conn, job_id, role=view.session.role)
        if result.error == "not_found":
            return view.done(f"Job #{job_id} no longer exists.", view.url("/admin/jobs"))
        if not result.ok:
            return view.done(f"Job #{job_id} was not changed: {result.detail}", back)
        if verb == "delete" and back.partition("?")[0] == view.url(f"/admin/jobs/{job_id}"):
            back = view.url("/admin/jobs")  # the deleted job's own page is gone
        running = verb == "cancel" and (result.row or {}).get("status") == "running"
        done = view.done(f"Job #{job_id} {ASKED if running else DONE[verb]}.", back)
        return kicking(view.request, done) if verb in KICKS else done

    return await gate.page(request, act, action=True)


# A debounced job (a reply to a burst of messages) older than this gets a warning beside Retry.
STALE_REPLY_MINUTES = 5


def payload_schema(type: str) -> tuple[str, dict[str, Any]] | None:
    """(model name, JSON Schema) of the payloads of `type`, when its handler here declares a pydantic model
    (`@crontick.handler(type, payload=Model)`); None otherwise."""
    from crontick.jobs import payloads, registry

    model = registry.payload_model(type)
    return None if model is None else (model.__name__, payloads.schema(model))


def reply_age_minutes(job: dict[str, Any], now: datetime) -> int | None:
    """Minutes since a debounced job's first message, when that is long enough that a retried reply may answer
    a conversation that has moved on; None for any other job."""
    if not job.get("payloads") or job.get("created_at") is None:
        return None
    minutes = int((now - job["created_at"]).total_seconds() // 60)
    return minutes if minutes >= STALE_REPLY_MINUTES else None
