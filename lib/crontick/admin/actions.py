"""The admin's POST side: sign in and out, and every action behind a confirmation and a 303."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from .. import logs
from ..settings import Settings
from . import render, session, store
from .pages import MAX_ID, panel, parse_payload
from .view import View, error, finish, form, gate

BULK_CHUNK = 500
# The confirmation counts one page of matches exactly and says "500+" beyond it (no unbounded count).
COUNT_PAGE = 500
# Browsers give up after about 20 redirects in a row; a page that refreshes itself restarts the count.
HOPS_PER_PAGE = 10
VERBS = {
    "retry": ("Retry", "primary", "run it again (it keeps its attempt history and gets at least one more attempt)"),
    "cancel": ("Cancel job", "danger", "cancel it: it will not run"),
    "delete": ("Delete job", "danger", "delete it and its attempt history for good"),
}


def safe_back(value: Any, default: str = "/admin") -> str:
    """A return address inside the admin only (never another site)."""
    text = value if isinstance(value, str) else ""
    if text.startswith("/admin") and not text.startswith("//") and "\\" not in text and "\n" not in text:
        return text
    return default


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.runtime.settings
    return settings


async def login_form(request: Request) -> Response:
    if not session.admin_open(_settings(request)):
        return error(
            request, 404, "not_found", "the admin is closed: set CRONTICK_ADMIN_SECRET (32+ characters) to open it"
        )
    message = "You are signed out." if request.query_params.get("out") else None
    return _login_page(request, message, failed=False, status=200)


def _login_page(request: Request, message: str | None, *, failed: bool, status: int) -> Response:
    nxt = safe_back(request.query_params.get("next"))
    html = render.render("login.html", {"message": message, "failed": failed, "next": nxt})
    return finish(HTMLResponse(html, status), request)


async def login(request: Request) -> Response:
    settings = _settings(request)
    if not session.admin_open(settings):
        return error(
            request, 404, "not_found", "the admin is closed: set CRONTICK_ADMIN_SECRET (32+ characters) to open it"
        )
    if not session.same_origin(request, settings):
        return error(request, 403, "cross_site_request", "sign in from the admin's own login page")
    fields = await form(request)
    given = fields.get("secret")
    role = session.match_secret(settings, given) if given else None
    if role is None:
        await asyncio.sleep(session.FAILED_LOGIN_DELAY_SECONDS)  # slows guessing; nothing is stored
        logs.warning("admin_login_failed", client=request.client.host if request.client else "?")
        return _login_page(request, "That secret opens nothing here.", failed=True, status=401)
    logs.info("admin_login", role=role)
    response = RedirectResponse(safe_back(fields.get("next")), 303)
    session.set_session(response, request, session.issue(settings, role, time.time()))
    return finish(response, request)


async def logout(request: Request) -> Response:
    settings = _settings(request)
    if not session.same_origin(request, settings):
        return error(request, 403, "cross_site_request", "sign out from the admin's own pages")
    response = RedirectResponse("/admin/login?out=1", 303)
    session.clear_session(response, request)
    return finish(response, request)


def _done(view: View, message: str, back: str) -> Response:
    response = RedirectResponse(back, 303)
    session.set_flash(response, view.request, view.settings, view.session, message)
    return finish(response, view.request)


def _confirm(view: View, **context: Any) -> Response:
    return view.page(
        "confirm.html",
        {"details": [], "button_class": "primary", **context},
        title=context["heading"],
        nav=context.pop("nav", "jobs"),
    )


async def job_action(request: Request) -> Response:
    job_id = int(request.path_params["id"])
    verb = request.path_params["verb"]
    if job_id > MAX_ID:
        return error(request, 404, "job_not_found", f"expected a job id, got: {job_id} (larger than any id)")
    if verb not in VERBS:
        return error(
            request, 404, "not_found", f"expected one of {', '.join(VERBS)} after /admin/jobs/{job_id}/, got: {verb!r}"
        )

    async def act(view: View) -> Response:
        fields = await form(view.request)
        back = safe_back(fields.get("back"), f"/admin/jobs/{job_id}")
        label, style, what = VERBS[verb]
        if fields.get("confirm") != "yes":
            return _confirm(
                view,
                heading=f"{label} job #{job_id}?",
                question=f"This will {what}.",
                action_url=f"/admin/jobs/{job_id}/{verb}",
                fields={"back": back},
                button=label,
                button_class=style,
                back=back,
            )
        act_fn = {"retry": store.retry_job, "cancel": store.cancel_job, "delete": store.delete_job}[verb]
        async with view.connection() as conn:
            result = await act_fn(conn, job_id, role=view.session.role)
        if result.error == "not_found":
            return _done(view, f"Job #{job_id} no longer exists.", "/admin/jobs")
        if not result.ok:
            return _done(view, f"Job #{job_id} was not changed: {result.detail}", back)
        past = {"retry": "is pending again", "cancel": "is cancelled", "delete": "is deleted"}[verb]
        if verb == "delete" and back.startswith(f"/admin/jobs/{job_id}"):
            back = "/admin/jobs"
        return _done(view, f"Job #{job_id} {past}.", back)

    return await gate(request, act, action=True)


async def reminder_retry(request: Request) -> Response:
    booking_id = int(request.path_params["booking_id"])
    kind = request.path_params["kind"]
    if booking_id > MAX_ID:
        return error(
            request, 404, "reminder_not_found", f"expected a booking id, got: {booking_id} (larger than any id)"
        )

    async def act(view: View) -> Response:
        fields = await form(view.request)
        back = safe_back(fields.get("back"), "/admin/reminders")
        if fields.get("confirm") != "yes":
            return _confirm(
                view,
                heading=f"Retry the {kind} reminder of booking #{booking_id}?",
                question="Check the provider's log first: an 'unknown' reminder may already have "
                "reached the customer, and a retry sends it again.",
                action_url=f"/admin/reminders/{booking_id}/{kind}/retry",
                fields={"back": back},
                button="Retry reminder",
                back=back,
                nav="reminders",
            )
        async with view.connection() as conn:
            result = await store.retry_reminder(conn, booking_id, kind, role=view.session.role)
        if not result.ok:
            return _done(view, f"The {kind} reminder of booking #{booking_id} was not changed: {result.detail}", back)
        return _done(view, f"The {kind} reminder of booking #{booking_id} will be sent on the next tick.", back)

    return await gate(request, act, action=True)


def _int(text: str | None) -> int:
    return int(text) if text and text.isdigit() else 0


def _pack(state: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")


def _unpack(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


async def bulk_retry(request: Request) -> Response:
    """Confirm, then retry every failed job the frozen filter matches, 500 per request."""

    async def act(view: View) -> Response:
        fields = await form(view.request)
        job_type = fields.get("type", "").strip()
        payload_text = fields.get("payload", "").strip()
        back = safe_back(fields.get("back"), "/admin/jobs?status=failed")
        contains, problem = parse_payload(payload_text)
        if problem:
            return error(view.request, 400, "bad_payload_filter", problem)
        if fields.get("confirm") != "yes":
            found = await panel(
                view,
                lambda conn: store.list_jobs(
                    conn, status="failed", type=job_type or None, payload_contains=contains, limit=COUNT_PAGE
                ),
            )
            if found is None:
                return error(view.request, 503, "unavailable", "the database did not answer in time; try again")
            rows, more = found
            if not rows:
                return _done(view, "No failed job matches this filter: nothing to retry.", back)
            max_id = int(rows[0]["id"])
            matched = f"{COUNT_PAGE:,}+" if more else f"{len(rows):,}"
            details = ["status: failed", f"type: {job_type or 'any'}"] + (
                [f"payload contains: {payload_text}"] if payload_text else []
            )
            return _confirm(
                view,
                heading=f"Retry {matched} failed jobs?",
                question=f"Every failed job this filter matches, up to job #{max_id}, gets one more "
                "attempt, 500 at a time. Jobs that fail after now are left alone.",
                details=details,
                action_url="/admin/jobs/bulk-retry",
                fields={"type": job_type, "payload": payload_text, "max_id": max_id, "back": back},
                button=f"Retry {matched} jobs",
                back=back,
            )
        state = {
            "type": job_type,
            "payload": payload_text,
            "max_id": _int(fields.get("max_id")),
            "after": 0,
            "done": 0,
            "skipped": 0,
            "hop": 0,
            "back": back,
        }
        return await _bulk_step(view, state)

    return await gate(request, act, action=True)


async def bulk_continue(request: Request) -> Response:
    """The next chunk of a confirmed bulk retry, reached by a 303 or a self-refreshing page.

    A GET that changes rows, so it takes only the state this session signed: a forged or
    replayed link from elsewhere does nothing (a replay only meets jobs that are not failed).
    """

    async def act(view: View) -> Response:
        packed = view.request.query_params.get("state", "")
        state = _unpack(packed)
        if state is None or not session.sign_ok(
            view.settings, view.session, "bulk." + packed, view.request.query_params.get("sig", "")
        ):
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

    return await gate(request, act)


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
        return _done(view, f"Retried {state['done']:,} failed jobs{note}.", state["back"])
    state = {**state, "after": next_after, "hop": state["hop"] + 1}
    packed = _pack(state)
    url = render.link(
        "/admin/jobs/bulk-retry/continue",
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
