"""The admin's POST side: sign in and out, and every action behind a confirmation and a 303."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from crontick import logs
from crontick.admin import params, render, run_now, session, signouts, store
from crontick.admin.pages import PAYLOAD_MAX_CHARS, panel, parse_payload
from crontick.admin.params import BadParameter
from crontick.admin.return_to import safe_back
from crontick.admin.view import (
    View,
    bad_parameter,
    error,
    finish,
    form,
    form_too_large,
    gate,
    too_large,
)
from crontick.errors import ConfigError, DatabaseUnavailable, QueryTimeout
from crontick.http import mount
from crontick.http.body import BodyTooLarge
from crontick.settings import Settings

BULK_CHUNK = 500
# The confirmation counts one page of matches exactly and says "500+" beyond it (no unbounded count).
COUNT_PAGE = 500
# Browsers give up after about 20 redirects in a row; a page that refreshes itself restarts the count.
HOPS_PER_PAGE = 10
VERBS = {
    "retry": ("Retry", "primary", "run it again (it keeps its attempt history and gets at least one more attempt)"),
    "cancel": ("Cancel job", "danger", "cancel it: it will not run"),
    "delete": ("Delete job", "danger", "delete it and its attempt history for good"),
    "run-now": ("Run now", "primary", "make it due now (its attempts are untouched)"),
}


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
    nxt = safe_back(request, request.query_params.get("next"))
    context = {
        "message": message,
        "failed": failed,
        "next": nxt,
        "loopback": session.is_loopback_http(request),
        "root": mount.prefix(request),
    }
    html = render.render("login.html", context)
    return finish(HTMLResponse(html, status), request)


async def login(request: Request) -> Response:
    settings = _settings(request)
    if not session.admin_open(settings):
        return error(
            request, 404, "not_found", "the admin is closed: set CRONTICK_ADMIN_SECRET (32+ characters) to open it"
        )
    if not session.same_origin(request, settings):
        return error(request, 403, "cross_site_request", "sign in from the admin's own login page")
    # Anyone can get this far: the body is read under the cap, and a declared length over it is
    # refused before a byte is read.
    if form_too_large(request):
        return too_large(request)
    try:
        fields = await form(request)
    except BodyTooLarge:
        return too_large(request)
    except BadParameter as exc:
        return bad_parameter(request, exc)
    given = fields.get("secret")
    role = session.match_secret(settings, given) if given else None
    client = request.client.host if request.client else "?"
    audited = await _audit_sign_in(settings, role, client)
    if role is None:
        await asyncio.sleep(session.FAILED_LOGIN_DELAY_SECONDS)  # slows guessing
        logs.warning("admin_login_failed", client=client)
        return _login_page(request, "That secret opens nothing here.", failed=True, status=401)
    if not audited:  # a sign-in the audit log cannot hold is refused: the admin needs the database anyway
        return error(request, 503, "database_unavailable", "the database cannot be reached; try again in a minute")
    logs.info("admin_login", role=role)
    response = RedirectResponse(safe_back(request, fields.get("next")), 303)
    session.set_session(response, request, session.issue(settings, role, time.time()))
    return finish(response, request)


async def _audit_sign_in(settings: Settings, role: str | None, client: str) -> bool:
    """Write the sign-in's audit row (the role it opened, or none); False when the database cannot take it."""
    try:
        async with store.connection(settings.require_database_url()) as conn:
            await signouts.signed_in(conn, role, client)
    except (DatabaseUnavailable, QueryTimeout, ConfigError) as exc:
        logs.error("admin_sign_in_not_audited", detail=str(exc))
        return False
    return True


async def logout(request: Request) -> Response:
    """Sign out: the session's id is recorded as ended, so every copy of its cookie stops working too."""
    settings = _settings(request)
    if not session.same_origin(request, settings):
        return error(request, 403, "cross_site_request", "sign out from the admin's own pages")
    now = time.time()
    values = session.cookie_values(request, session.cookie_name(request))
    found = next(filter(None, (session.verified(settings, value, now) for value in values)), None)
    response: Response = RedirectResponse(mount.url(request, "/admin/login?out=1"), 303)
    if found is not None:
        try:
            async with store.connection(settings.require_database_url()) as conn:
                await signouts.sign_out(conn, found[1], found[2], found[0])
        except (DatabaseUnavailable, QueryTimeout, ConfigError) as exc:
            logs.error("admin_sign_out_failed", detail=str(exc))
            response = error(
                request,
                503,
                "database_unavailable",
                "signed out in this browser, but the database cannot be reached to end the session: a copy "
                "of its cookie works until it expires. Try again, or rotate the secret to end every session",
            )
        else:
            logs.info("admin_logout", role=found[0])
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
        fields = await form(view.request)
        back = safe_back(view.request, fields.get("back"), f"/admin/jobs/{job_id}")
        label, style, what = VERBS[verb]
        if fields.get("confirm") != "yes":
            return _confirm(
                view,
                heading=f"{label} job #{job_id}?",
                question=f"This will {what}.",
                action_url=view.url(f"/admin/jobs/{job_id}/{verb}"),
                fields={"back": back},
                button=label,
                button_class=style,
                back=back,
            )
        act_fn = {
            "retry": store.retry_job,
            "cancel": store.cancel_job,
            "delete": store.delete_job,
            "run-now": run_now.run_now_job,
        }[verb]
        async with view.connection() as conn:
            result = await act_fn(conn, job_id, role=view.session.role)
        if result.error == "not_found":
            return _done(view, f"Job #{job_id} no longer exists.", view.url("/admin/jobs"))
        if not result.ok:
            return _done(view, f"Job #{job_id} was not changed: {result.detail}", back)
        past = {"retry": "is pending again", "cancel": "is cancelled", "delete": "is deleted", "run-now": "is due now"}[
            verb
        ]
        if verb == "delete" and back.partition("?")[0] == view.url(f"/admin/jobs/{job_id}"):
            back = view.url("/admin/jobs")  # the deleted job's own page is gone
        return _done(view, f"Job #{job_id} {past}.", back)

    return await gate(request, act, action=True)


async def reminder_retry(request: Request) -> Response:
    # The reminder source's id as text (a uuid, a number, anything: reminder_sends.booking_id).
    found = request.path_params["booking_id"]
    kind = request.path_params["kind"]
    if not found or len(found) > 200 or not params.storable(found) or len(kind) > 63 or not params.storable(kind):
        return error(
            request,
            404,
            "reminder_not_found",
            "expected a booking id and a reminder kind, got: "
            f"{params.shown(request.path_params['booking_id'])} and {params.shown(kind)}",
        )
    booking_id = found

    async def act(view: View) -> Response:
        fields = await form(view.request)
        back = safe_back(view.request, fields.get("back"), "/admin/reminders")
        if fields.get("confirm") != "yes":
            return _confirm(
                view,
                heading=f"Retry the {kind} reminder of booking #{booking_id}?",
                question="Check the provider's log first: an 'unknown' reminder may already have "
                "reached the customer, and a retry sends it again.",
                action_url=view.url(f"/admin/reminders/{quote(booking_id, safe='')}/{quote(kind, safe='')}/retry"),
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


def _pack(state: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")


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


def _unpack(text: str) -> dict[str, Any] | None:
    """The state of a bulk retry that `_pack` made (its signature already checked), or None."""
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or set(value) != set(_STATE):
        return None
    return value if all(type(value[k]) is t for k, t in _STATE.items()) else None


async def bulk_retry(request: Request) -> Response:
    """Confirm, then retry every failed job the frozen filter matches, 500 per request."""

    async def act(view: View) -> Response:
        fields = await form(view.request)
        job_type = params.text(fields.get("type"), "type")
        payload_text = params.text(fields.get("payload"), "payload", max_chars=PAYLOAD_MAX_CHARS)
        back = safe_back(view.request, fields.get("back"), "/admin/jobs?status=failed")
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
                action_url=view.url("/admin/jobs/bulk-retry"),
                fields={"type": job_type, "payload": payload_text, "max_id": max_id, "back": back},
                button=f"Retry {matched} jobs",
                back=back,
            )
        state = {
            "type": job_type,
            "payload": payload_text,
            "max_id": params.required_id(fields.get("max_id"), "max_id"),
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
