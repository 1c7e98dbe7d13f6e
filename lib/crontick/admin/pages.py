"""The admin's read pages: Failed (landing), Jobs, Job detail, Reminders, Ticks and Overview."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from crontick import logs
from crontick.admin import figures, params, render, run_now, store
from crontick.admin.params import BadParameter
from crontick.admin.view import View, error, finish, gate
from crontick.errors import BadCursor, QueryTimeout

T = TypeVar("T")
PAGE_ROWS = 50
JOB_STATUSES = ("pending", "running", "done", "failed", "cancelled", "waiting")
REMINDER_STATUSES = ("sending", "sent", "failed", "unknown")
PAYLOAD_MAX_CHARS = 4096
# The status filter's choices: `pending` also split on run_after into due (now) and scheduled (later).
FILTER_STATUSES = (*JOB_STATUSES, *run_now.PENDING_SPLIT)


async def panel(view: View, read: Callable[[Any], Awaitable[T]]) -> T | None:
    """One panel's reads (the store runs them in one short read-only transaction); None, shown as
    "unavailable", when they hit the statement timeout."""
    try:
        async with view.connection() as conn:
            return await read(conn)
    except QueryTimeout as exc:
        logs.warning("admin_panel_timeout", path=view.request.url.path, detail=str(exc))
        return None


def _cursor(view: View) -> int | None:
    """The page's cursor; a cursor we did not issue starts from the newest row again."""
    try:
        return store.decode_cursor(view.request.query_params.get("cursor") or None)
    except BadCursor:
        return None


async def failed(request: Request) -> Response:
    async def build(view: View) -> Response:
        before = _cursor(view)
        jobs = await panel(view, lambda tx: store.list_jobs(tx, status="failed", before_id=before, limit=PAGE_ROWS))

        async def both(conn: Any) -> list[dict[str, Any]]:
            source = view.settings.reminder_source_parts
            failed_rows, _ = await store.list_reminders(conn, status="failed", limit=PAGE_ROWS, source=source)
            unknown_rows, _ = await store.list_reminders(conn, status="unknown", limit=PAGE_ROWS, source=source)
            return sorted([*failed_rows, *unknown_rows], key=lambda r: int(r["id"]), reverse=True)

        reminders = await panel(view, both)
        rows, next_cursor = jobs if jobs is not None else (None, None)
        return view.page(
            "failed.html",
            {"jobs": rows, "next_cursor": next_cursor, "reminders": reminders},
            title="Failed",
            nav="failed",
        )

    return await gate(request, build)


def _job_filters(view: View) -> tuple[dict[str, str], Any, str | None]:
    """The filters from the URL, the payload as JSON, and a message when the payload is not JSON."""
    q = view.request.query_params
    filters = {
        "status": q.get("status", ""),
        "type": params.text(q.get("type"), "type"),
        "payload": params.text(q.get("payload"), "payload", max_chars=PAYLOAD_MAX_CHARS),
        "error": params.text(q.get("error"), "error", max_chars=run_now.ERROR_TEXT_MAX_CHARS),
    }
    contains, problem = parse_payload(filters["payload"])
    if filters["status"] and filters["status"] not in FILTER_STATUSES:
        problem = f"Unknown status {filters['status']!r}: expected one of {', '.join(FILTER_STATUSES)}."
        filters["status"] = ""
    split = filters["status"] in run_now.PENDING_SPLIT
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


async def jobs(request: Request) -> Response:
    async def build(view: View) -> Response:
        jump = view.request.query_params.get("id", "").strip().lstrip("#")
        if jump:
            target = params.row_id(jump)
            if target is None:
                return error(view.request, 400, "bad_id", f"expected a job id (digits), got: {params.shown(jump)}")
            return finish(RedirectResponse(view.link(f"/admin/jobs/{target}"), 303), view.request)
        filters, contains, problem = _job_filters(view)
        before = _cursor(view)
        result = None
        kind = filters["type"] or None
        if problem is None and filters["error"]:
            result = await panel(
                view,
                lambda tx: run_now.search_errors(tx, filters["error"], type=kind, before_id=before, limit=PAGE_ROWS),
            )
        elif problem is None and filters["status"] in run_now.PENDING_SPLIT:
            split = filters["status"]
            result = await panel(
                view, lambda tx: run_now.list_pending(tx, split=split, type=kind, before_id=before, limit=PAGE_ROWS)
            )
        elif problem is None:
            result = await panel(
                view,
                lambda tx: store.list_jobs(
                    tx,
                    status=filters["status"] or None,
                    type=kind,
                    payload_contains=contains,
                    before_id=before,
                    limit=PAGE_ROWS,
                ),
            )
        rows, next_cursor = result if result is not None else (None if problem is None else [], None)
        data = {
            "jobs": rows,
            "next_cursor": next_cursor,
            "filters": filters,
            "problem": problem,
            "statuses": FILTER_STATUSES,
            "error_window": run_now.ERROR_WINDOW_JOBS,
        }
        return view.page("jobs.html", data, title="Jobs", nav="jobs", status=400 if problem else 200)

    return await gate(request, build)


async def job(request: Request) -> Response:
    text = request.path_params["id"]

    async def build(view: View) -> Response:
        job_id = params.row_id(text)
        if job_id is None:
            return error(view.request, 404, "job_not_found", f"expected a job id, got: {params.shown(text)}")

        async def read(tx: Any) -> Any:
            found = await store.get_job(tx, job_id)
            if found is not None:
                await run_now.attempt_ticks(tx, found["history"])  # the tick of each attempt (issue 23)
            return found

        row = await panel(view, read)
        if row is None:
            return error(
                view.request,
                404,
                "job_not_found",
                f"expected a job with id {job_id}, got none (it may have been deleted)",
            )
        back = view.link("/admin/jobs", status=row.get("status"), type=row.get("type"))
        return view.page("job.html", {"job": row, "back": back}, title=f"Job #{job_id}", nav="jobs")

    return await gate(request, build)


async def reminders(request: Request) -> Response:
    async def build(view: View) -> Response:
        status = params.choice(view.request.query_params.get("status"), "status", REMINDER_STATUSES)
        before = _cursor(view)
        source = view.settings.reminder_source_parts
        due = await panel(view, lambda tx: store.due_reminders(tx, limit=PAGE_ROWS, source=source))
        sends = await panel(
            view,
            lambda tx: store.list_reminders(tx, status=status or None, before=before, limit=PAGE_ROWS, source=source),
        )
        rows, next_cursor = sends if sends is not None else (None, None)
        data = {"due": due, "sends": rows, "next_cursor": next_cursor, "status": status, "statuses": REMINDER_STATUSES}
        return view.page("reminders.html", data, title="Reminders", nav="reminders")

    return await gate(request, build)


def summary_items(summary: Any) -> list[tuple[str, str]]:
    """A tick's summary as short key/value pairs for one table cell (nested counts flattened)."""
    if not isinstance(summary, dict):
        return []
    items: list[tuple[str, str]] = []
    for key, value in summary.items():
        if isinstance(value, dict):
            items.extend((f"{key}.{k}", str(v)) for k, v in value.items() if v not in (0, None, [], {}))
        elif value not in (0, None, [], {}, ""):
            items.append((key, str(value)))
    return items


async def ticks(request: Request) -> Response:
    async def build(view: View) -> Response:
        before = _cursor(view)
        result = await panel(view, lambda tx: store.list_ticks(tx, before_id=before, limit=PAGE_ROWS))
        rows, next_cursor = result if result is not None else (None, None)
        for row in rows or []:
            row["duration_seconds"] = (row["finished_at"] - row["started_at"]).total_seconds()
        data = {"ticks": rows, "next_cursor": next_cursor}
        if view.json:
            return view.page("ticks.html", data, title="Ticks", nav="ticks")
        return view.page("ticks.html", {**data, "summary_items": summary_items}, title="Ticks", nav="ticks")

    return await gate(request, build)


async def overview(request: Request) -> Response:
    async def build(view: View) -> Response:
        stats = await panel(view, store.stats)
        types = await panel(view, figures.type_figures)  # worst first
        data = {"stats": stats, "statuses": JOB_STATUSES, "types": types}
        if view.json:
            return view.page("overview.html", data, title="Overview", nav="overview")
        hours = render.last_24_hours((stats or {}).get("hourly") or [], view.now)
        return view.page("overview.html", {**data, "chart": render.chart(hours)}, title="Overview", nav="overview")

    return await gate(request, build)
