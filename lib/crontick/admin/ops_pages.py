"""The admin pages of issue 23: the audit log, the schedules' Enqueue now / Pause / Resume, and "Run now"
for everything scheduled that a filter matches (each action behind a confirmation and a 303)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import audit_log, params, run_now, schedule_control, store
from crontick.admin.actions import COUNT_PAGE, _confirm, _done
from crontick.admin.pages import PAGE_ROWS, PAYLOAD_MAX_CHARS, _cursor, panel, parse_payload
from crontick.admin.return_to import safe_back
from crontick.admin.view import View, error, form, gate

# A confirmed bulk "run now" moves at most this many chunks (of run_now.BULK_CHUNK) per request;
# past them it asks to continue, so one request stays far inside a function's time limit.
CHUNKS_PER_REQUEST = 10
SCHEDULE_VERBS = {
    "enqueue": ("Enqueue now", "primary", "enqueue one job of it now, outside its slots (it takes no slot)"),
    "pause": (
        "Pause",
        "danger",
        "pause it: until it is resumed it enqueues nothing, and its slots are recorded as paused",
    ),
    "resume": (
        "Resume",
        "primary",
        "resume it: its next slot runs as usual; the slots missed while paused stay skipped",
    ),
}


async def audit(request: Request) -> Response:
    async def build(view: View) -> Response:
        before = _cursor(view)
        found = await panel(view, lambda tx: audit_log.list_audit(tx, before_id=before, limit=PAGE_ROWS))
        rows, next_cursor = found if found is not None else (None, None)
        return view.page("audit.html", {"entries": rows, "next_cursor": next_cursor}, title="Audit", nav="audit")

    return await gate(request, build)


async def schedule_action(request: Request) -> Response:
    name, verb = request.path_params["name"], request.path_params["verb"]
    if verb not in SCHEDULE_VERBS or len(name) > 200 or not params.storable(name):
        return error(
            request,
            404,
            "not_found",
            f"expected a schedule and one of {', '.join(SCHEDULE_VERBS)}, got: {params.shown(name)} and "
            f"{params.shown(verb)}",
        )

    async def act(view: View) -> Response:
        fields = await form(view.request)
        back = safe_back(view.request, fields.get("back"), "/admin/schedules")
        label, style, what = SCHEDULE_VERBS[verb]
        if fields.get("confirm") != "yes":
            return _confirm(
                view,
                heading=f"{label}: schedule {name}?",
                question=f"This will {what}.",
                action_url=view.url(f"/admin/schedules/{quote(name, safe='')}/{verb}"),
                fields={"back": back},
                button=label,
                button_class=style,
                back=back,
                nav="schedules",
            )
        act_fn = {
            "enqueue": schedule_control.enqueue_now,
            "pause": schedule_control.pause,
            "resume": schedule_control.resume,
        }[verb]
        async with view.connection() as conn:
            result = await act_fn(conn, name, role=view.session.role)
        if not result.ok:
            return _done(view, f"Schedule {name} was not changed: {result.detail}", back)
        row = result.row or {}
        message = {
            "enqueue": f"Enqueued job #{row.get('job_id')} for schedule {name}, outside its slots.",
            "pause": f"Schedule {name} is paused: its slots are recorded as skipped (paused).",
            "resume": f"Schedule {name} is resumed ({row.get('skipped_slots', 0)} slot(s) missed while paused).",
        }[verb]
        return _done(view, message, back)

    return await gate(request, act, action=True)


async def bulk_run_now(request: Request) -> Response:
    """Confirm, then make due now every scheduled job the frozen filter matches, chunk after chunk."""

    async def act(view: View) -> Response:
        fields = await form(view.request)
        job_type = params.text(fields.get("type"), "type")
        payload_text = params.text(fields.get("payload"), "payload", max_chars=PAYLOAD_MAX_CHARS)
        back = safe_back(view.request, fields.get("back"), "/admin/jobs?status=scheduled")
        contains, problem = parse_payload(payload_text)
        if problem:
            return error(view.request, 400, "bad_payload_filter", problem)
        details = ["status: scheduled (pending, due later)", f"type: {job_type or 'any'}"] + (
            [f"payload contains: {payload_text}"] if payload_text else []
        )
        if fields.get("confirm") != "yes":
            found = await panel(
                view,
                lambda conn: run_now.list_pending(conn, split="scheduled", type=job_type or None, limit=COUNT_PAGE),
            )
            if found is None:
                return error(view.request, 503, "unavailable", "the database did not answer in time; try again")
            rows, more = found
            if not rows:
                return _done(view, "No scheduled job matches this filter: nothing to run now.", back)
            max_id = int(rows[0]["id"])
            matched = f"{COUNT_PAGE:,}+" if more or contains else f"{len(rows):,}"
            return _confirm(
                view,
                heading=f"Run {matched} scheduled jobs now?",
                question=f"Every scheduled job this filter matches, up to job #{max_id}, becomes due now, "
                f"{run_now.BULK_CHUNK} at a time; their attempts are untouched.",
                details=details,
                action_url=view.url("/admin/jobs/bulk-run-now"),
                fields={"type": job_type, "payload": payload_text, "max_id": max_id, "after": 0, "back": back},
                button=f"Run {matched} jobs now",
                back=back,
            )
        if not view.session.can_act:
            return error(view.request, 403, "read_only", "the viewer role can look but not act")
        max_id = params.required_id(fields.get("max_id"), "max_id")
        after: int | None = params.row_id(fields.get("after") or "") or 0
        moved = 0
        async with view.connection() as conn:
            for _ in range(CHUNKS_PER_REQUEST):
                n, after = await _chunk(conn, job_type, contains, max_id, after, view.session.role)
                moved += n
                if after is None:
                    return _done(view, f"{moved:,} scheduled jobs are due now.", back)
        return _confirm(
            view,
            heading=f"{moved:,} jobs are due now; continue?",
            question="More scheduled jobs match the filter. Continue with the next ones.",
            details=details,
            action_url=view.url("/admin/jobs/bulk-run-now"),
            fields={"type": job_type, "payload": payload_text, "max_id": max_id, "after": after, "back": back},
            button="Continue",
            back=back,
        )

    return await gate(request, act, action=True)


async def _chunk(
    conn: store.Conn, job_type: str, contains: Any, max_id: int, after: int | None, role: str
) -> tuple[int, int | None]:
    return await run_now.bulk_run_now(
        conn, type=job_type or None, payload_contains=contains, max_id=max_id, after_id=after, role=role
    )
