"""The jobs' bulk forms: retry every failed job, or run now every scheduled job, that a frozen filter matches.

Each is confirmed first (with a bounded count), then works through the filter chunk after chunk: a bulk
retry by 303s and self-refreshing pages that carry a signed state, a bulk run now by asking to continue.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from crontick.admin import gate, inputs, params, render, session, tx
from crontick.admin.answer import error, finish, kicking
from crontick.admin.jobs import BULK_CHUNK, search, store
from crontick.admin.jobs.page import PAYLOAD_MAX_CHARS, parse_payload
from crontick.admin.return_to import safe_back
from crontick.admin.view import View

__all__ = ["BULK_CHUNK", "bulk_continue", "bulk_retry", "bulk_run_now"]

# The confirmation counts one page of matches exactly and says "500+" beyond it (no unbounded count).
COUNT_PAGE = 500
# Browsers give up after about 20 redirects in a row; a page that refreshes itself restarts the count.
HOPS_PER_PAGE = 10
# A confirmed bulk "run now" moves at most this many chunks (of BULK_CHUNK) per request;
# past them it asks to continue, so one request stays far inside a function's time limit.
CHUNKS_PER_REQUEST = 10
_STATE = {
    "type": str,
    "payload": str,
    "max_id": int,
    "after": int,
    "done": int,
    "skipped": int,
    "hop": int,
    "back": str,
}


def _pack(state: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")


def _unpack(text: str) -> dict[str, Any] | None:
    """The state of a bulk retry that `_pack` made (its signature already checked), or None."""
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or set(value) != set(_STATE):
        return None
    return value if all(type(value[k]) is t for k, t in _STATE.items()) else None


def _filter(view: View, fields: dict[str, str], default_back: str) -> tuple[str, str, str, Any, str | None]:
    """A bulk form's filter: (type, payload text, back, payload as JSON, a problem with the payload)."""
    job_type = params.text(fields.get("type"), "type")
    payload_text = params.text(fields.get("payload"), "payload", max_chars=PAYLOAD_MAX_CHARS)
    back = safe_back(view.request, fields.get("back"), default_back)
    contains, problem = parse_payload(payload_text)
    return job_type, payload_text, back, contains, problem


def _details(status: str, job_type: str, payload_text: str) -> list[str]:
    return [f"status: {status}", f"type: {job_type or 'any'}"] + (
        [f"payload contains: {payload_text}"] if payload_text else []
    )


async def bulk_retry(request: Request) -> Response:
    """Confirm, then retry every failed job the frozen filter matches, 500 per request."""

    async def act(view: View) -> Response:
        fields = await inputs.form(view.request)
        job_type, payload_text, back, contains, problem = _filter(view, fields, "/admin/jobs?status=failed")
        if problem:
            return error(view.request, 400, "bad_payload_filter", problem)
        if fields.get("confirm") != "yes":
            found = await view.panel(
                lambda conn: store.list_jobs(
                    conn, status="failed", type=job_type or None, payload_contains=contains, limit=COUNT_PAGE
                ),
            )
            if found is None:
                return error(view.request, 503, "unavailable", "the database did not answer in time; try again")
            rows, more = found
            if not rows:
                return view.done("No failed job matches this filter: nothing to retry.", back)
            max_id = int(rows[0]["id"])
            matched = f"{COUNT_PAGE:,}+" if more else f"{len(rows):,}"
            return view.confirm(
                heading=f"Retry {matched} failed jobs?",
                question=f"Every failed job this filter matches, up to job #{max_id}, gets one more "
                "attempt, 500 at a time. Jobs that fail after now are left alone.",
                details=_details("failed", job_type, payload_text),
                action_url=view.url("/admin/jobs/bulk-retry"),
                fields={"type": job_type, "payload": payload_text, "max_id": max_id, "back": back},
                button=f"Retry {matched} jobs",
                back=back,
            )
        max_id = params.required_id(fields.get("max_id"), "max_id")
        state = {"type": job_type, "payload": payload_text, "max_id": max_id, "after": 0, "done": 0, "skipped": 0}
        return await _bulk_step(view, {**state, "hop": 0, "back": back})

    return await gate.page(request, act, action=True)


async def bulk_continue(request: Request) -> Response:
    """The next chunk of a confirmed bulk retry, reached by a 303 or a self-refreshing page.

    A GET that changes rows, so it takes only the state this session signed: a forged or
    replayed link from elsewhere does nothing (a replay only meets jobs that are not failed).
    """

    async def act(view: View) -> Response:
        packed = view.request.query_params.get("state", "")
        # The signature first: only a state this session was given is parsed at all.
        signed = session.sign_ok(
            view.settings, view.session, "bulk." + packed, view.request.query_params.get("sig", "")
        )
        state = _unpack(packed) if signed else None
        if state is None:
            return error(
                view.request,
                403,
                "bad_signature",
                "this bulk-retry link was not issued to this session; start again from the Jobs page",
            )
        site = view.request.headers.get("sec-fetch-site")
        if site is not None and site != "same-origin":
            return error(view.request, 403, "cross_site_request", "continue the bulk retry from the admin's own pages")
        return await _bulk_step(view, state)

    return await gate.page(request, act)


async def _bulk_step(view: View, state: dict[str, Any]) -> Response:
    if not view.session.can_act:
        return error(view.request, 403, "read_only", "the viewer role can look but not act")
    contains, _ = parse_payload(state["payload"])
    async with view.connection() as conn:
        done, skipped, next_after = await store.bulk_retry(
            conn,
            status="failed",
            type=state["type"] or None,
            payload_contains=contains,
            max_id=state["max_id"],
            after_id=state["after"],
            chunk=BULK_CHUNK,
            role=view.session.role,
        )
    state = {**state, "done": state["done"] + done, "skipped": state["skipped"] + skipped}
    if next_after is None:
        note = f" ({state['skipped']:,} skipped: their key is held by another active job)" if state["skipped"] else ""
        return kicking(view.request, view.done(f"Retried {state['done']:,} failed jobs{note}.", state["back"]))
    state = {**state, "after": next_after, "hop": state["hop"] + 1}
    packed = _pack(state)
    url = render.link(
        view.url("/admin/jobs/bulk-retry/continue"),
        {"state": packed, "sig": session.sign(view.settings, view.session, "bulk." + packed)},
    )
    if state["hop"] % HOPS_PER_PAGE:
        return finish(RedirectResponse(url, 303), view.request)
    return view.page(
        "progress.html",
        {"done": state["done"], "skipped": state["skipped"], "next_url": url},
        title="Retrying",
        nav="jobs",
    )


async def bulk_run_now(request: Request) -> Response:
    """Confirm, then make due now every scheduled job the frozen filter matches, chunk after chunk."""

    async def act(view: View) -> Response:
        fields = await inputs.form(view.request)
        job_type, payload_text, back, contains, problem = _filter(view, fields, "/admin/jobs?status=scheduled")
        if problem:
            return error(view.request, 400, "bad_payload_filter", problem)
        details = _details("scheduled (pending, due later)", job_type, payload_text)
        if fields.get("confirm") != "yes":
            return await _confirm_run_now(view, job_type, payload_text, contains, back, details)
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
                    return kicking(view.request, view.done(f"{moved:,} scheduled jobs are due now.", back))
        return view.confirm(
            heading=f"{moved:,} jobs are due now; continue?",
            question="More scheduled jobs match the filter. Continue with the next ones.",
            details=details,
            action_url=view.url("/admin/jobs/bulk-run-now"),
            fields={"type": job_type, "payload": payload_text, "max_id": max_id, "after": after, "back": back},
            button="Continue",
            back=back,
        )

    return await gate.page(request, act, action=True)


async def _confirm_run_now(
    view: View, job_type: str, payload_text: str, contains: Any, back: str, details: list[str]
) -> Response:
    """The bulk run now's confirmation, with a count of one page of the scheduled jobs it matches."""
    found = await view.panel(
        lambda conn: search.list_pending(conn, split="scheduled", type=job_type or None, limit=COUNT_PAGE),
    )
    if found is None:
        return error(view.request, 503, "unavailable", "the database did not answer in time; try again")
    rows, more = found
    if not rows:
        return view.done("No scheduled job matches this filter: nothing to run now.", back)
    max_id = int(rows[0]["id"])
    matched = f"{COUNT_PAGE:,}+" if more or contains else f"{len(rows):,}"
    return view.confirm(
        heading=f"Run {matched} scheduled jobs now?",
        question=f"Every scheduled job this filter matches, up to job #{max_id}, becomes due now, "
        f"{BULK_CHUNK} at a time; their attempts are untouched.",
        details=details,
        action_url=view.url("/admin/jobs/bulk-run-now"),
        fields={"type": job_type, "payload": payload_text, "max_id": max_id, "after": 0, "back": back},
        button=f"Run {matched} jobs now",
        back=back,
    )


async def _chunk(
    conn: tx.Conn, job_type: str, contains: Any, max_id: int, after: int | None, role: str
) -> tuple[int, int | None]:
    return await store.bulk_run_now(
        conn, type=job_type or None, payload_contains=contains, max_id=max_id, after_id=after, role=role
    )
