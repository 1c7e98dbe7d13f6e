"""Signing in and out: the login form, the secret it takes (audited either way), and sign-out."""

from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from crontick import logs
from crontick.admin import gate, inputs, render, session, tx
from crontick.admin.answer import error, finish
from crontick.admin.params import BadParameter
from crontick.admin.return_to import safe_back
from crontick.admin.sign_in import store
from crontick.errors import ConfigError, DatabaseUnavailable, QueryTimeout
from crontick.http import mount
from crontick.http.body import BodyTooLarge
from crontick.settings import Settings


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.runtime.settings
    return settings


async def login_form(request: Request) -> Response:
    if not session.admin_open(_settings(request)):
        return error(request, 404, "not_found", gate.CLOSED)
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
        return error(request, 404, "not_found", gate.CLOSED)
    if not session.same_origin(request, settings):
        return error(request, 403, "cross_site_request", "sign in from the admin's own login page")
    # Anyone can get this far: the body is read under the cap, and a declared length over it is
    # refused before a byte is read.
    if inputs.over_cap(request):
        return gate.too_large(request)
    try:
        fields = await inputs.form(request)
    except BodyTooLarge:
        return gate.too_large(request)
    except BadParameter as exc:
        return gate.bad_parameter(request, exc)
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
        async with tx.connection(settings.require_database_url()) as conn:
            await store.signed_in(conn, role, client)
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
            async with tx.connection(settings.require_database_url()) as conn:
                await store.sign_out(conn, found[1], found[2], found[0])
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
