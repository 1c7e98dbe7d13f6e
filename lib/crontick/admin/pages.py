"""The admin's read pages: Failed (landing), Jobs, Job detail, Reminders, Ticks and Overview."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from .. import logs
from ..errors import BadCursor, QueryTimeout
from . import render, store
from .view import View, error, finish, gate

T = TypeVar("T")
PAGE_ROWS = 50
JOB_STATUSES = ("pending", "running", "done", "failed", "cancelled")
REMINDER_STATUSES = ("sending", "sent", "failed", "unknown")


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
            failed_rows, _ = await store.list_reminders(conn, status="failed", limit=PAGE_ROWS)
            unknown_rows, _ = await store.list_reminders(conn, status="unknown", limit=PAGE_ROWS)
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
        "type": q.get("type", "").strip(),
        "payload": q.get("payload", "").strip(),
    }
    contains, problem = parse_payload(filters["payload"])
    if filters["status"] and filters["status"] not in JOB_STATUSES:
        problem = f"Unknown status {filters['status']!r}: expected one of {', '.join(JOB_STATUSES)}."
        filters["status"] = ""
    return filters, contains, problem


def parse_payload(text: str) -> tuple[Any, str | None]:
    if not text:
        return None, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f'The payload filter must be JSON, such as {{"user_id": 42}}: {exc.msg} at character {exc.pos}.'
    if not isinstance(value, dict):
        return None, 'The payload filter must be a JSON object, such as {"user_id": 42}.'
    return value, None


async def jobs(request: Request) -> Response:
    async def build(view: View) -> Response:
        jump = view.request.query_params.get("id", "").strip().lstrip("#")
        if jump:
            if not jump.isdigit() or int(jump) > MAX_ID:
                return error(view.request, 400, "bad_id", f"expected a job id (digits), got: {jump[:40]!r}")
            return finish(RedirectResponse(view.link(f"/admin/jobs/{int(jump)}"), 303), view.request)
        filters, contains, problem = _job_filters(view)
        before = _cursor(view)
        result = None
        if problem is None:
            result = await panel(
                view,
                lambda tx: store.list_jobs(
                    tx,
                    status=filters["status"] or None,
                    type=filters["type"] or None,
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
            "statuses": JOB_STATUSES,
        }
        return view.page("jobs.html", data, title="Jobs", nav="jobs", status=400 if problem else 200)

    return await gate(request, build)


# bigint: a larger id names no row, and psycopg would send it as numeric, which no index on id serves.
MAX_ID = 2**63 - 1


async def job(request: Request) -> Response:
    job_id = int(request.path_params["id"])

    async def build(view: View) -> Response:
        row = await panel(view, lambda tx: store.get_job(tx, job_id)) if job_id <= MAX_ID else None
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
        status = view.request.query_params.get("status", "")
        status = status if status in REMINDER_STATUSES else ""
        before = _cursor(view)
        due = await panel(view, lambda tx: store.due_reminders(tx, limit=PAGE_ROWS))
        sends = await panel(
            view, lambda tx: store.list_reminders(tx, status=status or None, before=before, limit=PAGE_ROWS)
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
        data = {"stats": stats, "statuses": JOB_STATUSES}
        if view.json:
            return view.page("overview.html", data, title="Overview", nav="overview")
        hours = render.last_24_hours((stats or {}).get("hourly") or [], view.now)
        return view.page("overview.html", {**data, "chart": render.chart(hours)}, title="Overview", nav="overview")

    return await gate(request, build)
