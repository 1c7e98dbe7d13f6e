"""The one gate in front of every admin route: who asks, may they, and the refusal as a page or as JSON.

A page or form (`page`) takes a signed-in session (the cookie, or an authorize() hook): no session
is a redirect to sign-in (a 401 for JSON and for forms), and a form also passes the CSRF checks
(Sec-Fetch-Site or Origin, then the session's token). An API route (`api`) takes a bearer secret:
no secret is a 401, the viewer's on an action a 403. Both answer their refusals and the database's
failures with crontick.admin.answer.error, and both set who acts (crontick.admin.actor) for the audit log.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import psycopg
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from crontick import logs
from crontick.admin import actor, inputs, render, session, tx
from crontick.admin.answer import error, finish, wants_json
from crontick.admin.params import BadParameter
from crontick.admin.session import Session
from crontick.admin.sign_in.store import signed_out
from crontick.admin.view import View
from crontick.errors import ConfigError, CrontickError, DatabaseUnavailable, QueryTimeout
from crontick.http import mount
from crontick.http.body import BodyTooLarge, misconfigured_body
from crontick.settings import Settings

RETRY_AFTER_SECONDS = 30
CLOSED = "the admin is closed: set CRONTICK_ADMIN_SECRET (32+ characters) to open it"

PageHandler = Callable[[View], Awaitable[Response]]
ApiHandler = Callable[[Request, tx.Conn, str], Awaitable[Response]]


# -- pages and forms: the session -------------------------------------------------------------------


async def page(request: Request, handler: PageHandler, *, action: bool = False) -> Response:
    """Run `handler` for a signed-in person; 404 while the admin is closed, login redirect otherwise."""
    runtime = request.app.state.runtime
    settings: Settings = runtime.settings
    if runtime.problem:
        # Before sign-in the caller may be anyone: the detail is in the log only.
        return error(request, 503, "misconfigured", misconfigured_body()["detail"])
    if not session.admin_open(settings):
        return error(request, 404, "not_found", CLOSED)
    if action and not session.same_origin(request, settings):
        # Before the session: a cross-site POST is refused whether or not its cookie came along.
        logs.warning(
            "admin_csrf_refused",
            reason="cross_origin",
            path=request.url.path,
            sec_fetch_site=request.headers.get("sec-fetch-site"),
            origin=request.headers.get("origin"),
        )
        return error(request, 403, "cross_site_request", "this form must be sent from the admin's own pages")
    try:
        sess = await _live_session(request, settings)
        if sess is None:
            return _sign_in_first(request)
        refusal = await _form_refusal(request, sess) if action else None
        if refusal is not None:
            return refusal
        with actor.acting_as(sess.actor):
            response = await handler(View(request, settings, sess))
    except BadParameter as exc:
        return bad_parameter(request, exc)
    except BodyTooLarge:
        return too_large(request)
    except (DatabaseUnavailable, QueryTimeout) as exc:
        logs.error("admin_database_unavailable", path=request.url.path, detail=str(exc))
        return error(request, 503, "database_unavailable", "the database cannot be reached; try again in a minute")
    except ConfigError as exc:  # no DATABASE_URL: the detail is for the operator's log
        logs.error("misconfigured", detail=str(exc))
        return error(request, 503, "misconfigured", misconfigured_body()["detail"])
    if sess.new_binding is not None and not wants_json(request):  # JSON answers carry no form
        session.set_binding(response, request, sess.new_binding)
    return response


def _sign_in_first(request: Request) -> Response:
    """No session: a person's GET goes to the sign-in page (and back here after), anything else is a 401."""
    if wants_json(request) or request.method != "GET":
        return error(request, 401, "unauthorized", f"sign in at {mount.url(request, '/admin/login')} first")
    target = render.link(
        mount.url(request, "/admin/login"),
        {"next": request.url.path + (f"?{request.url.query}" if request.url.query else "")},
    )
    return finish(RedirectResponse(target, 303), request)


def too_large(request: Request) -> Response:
    """413, as JSON or a page; the connection is closed, so the rest of the upload is never read."""
    response = error(
        request,
        413,
        "body_too_large",
        f"expected a form of at most {inputs.MAX_BODY_BYTES} bytes; admin forms are small",
    )
    response.headers["Connection"] = "close"
    return response


def bad_parameter(request: Request, exc: BadParameter) -> Response:
    return error(request, 400, "bad_parameter", str(exc))


async def _live_session(request: Request, settings: Settings) -> Session | None:
    """The request's session, unless it was signed out: one primary-key read, made only for a
    cookie whose signature holds (a forged or junk cookie never reaches the database)."""
    sess = await session.current(request, settings)
    if sess is None or sess.id is None:
        return sess
    async with tx.connection(settings.require_database_url()) as conn:
        ended = await signed_out(conn, sess.id)
    return None if ended else sess


async def _form_refusal(request: Request, sess: Session) -> Response | None:
    """A form's refusal: a body declared over the cap, a viewer acting, or a missing or stale CSRF token."""
    if inputs.over_cap(request):
        return too_large(request)
    if not sess.can_act:
        return error(request, 403, "read_only", "the viewer role can look but not act; sign in with the admin secret")
    given = (await inputs.form(request)).get("csrf", "")
    if not session.token_ok(sess, given):
        logs.warning("admin_csrf_refused", reason="bad_token", path=request.url.path)
        return error(
            request, 403, "bad_csrf_token", "the form's token is missing or stale; reload the page and try again"
        )
    return None


# -- the JSON API: the bearer secret ----------------------------------------------------------------


def bearer_role(authorization: str | None, settings: Settings) -> str | None:
    """ "admin", "viewer" or None. Both secrets are compared, in constant time, whatever matches;
    CRON_SECRET is never one of them, however the Settings were built (Settings.admin_roles)."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return session.match_secret(settings, token)


def refusal(request: Request, *, write: bool = False) -> tuple[Response | None, str]:
    """(a JSON refusal, or None and the caller's role): closed, unauthorised, or a viewer acting."""
    settings = request.app.state.runtime.settings
    if "admin" not in settings.admin_roles:  # unset, or equal to CRON_SECRET: closed
        return error(
            request,
            503,
            "admin_not_configured",
            "the admin is closed: set CRONTICK_ADMIN_SECRET (32+ characters, not CRON_SECRET) to open it",
        ), ""
    role = bearer_role(request.headers.get("authorization"), settings)
    if role is None:
        return error(
            request,
            401,
            "unauthorized",
            "send Authorization: Bearer <CRONTICK_ADMIN_SECRET> (or the viewer secret for reads)",
            {"WWW-Authenticate": 'Bearer realm="crontick admin"'},
        ), ""
    if write and role != "admin":
        return error(
            request, 403, "read_only", "the viewer secret can read but not act; use CRONTICK_ADMIN_SECRET"
        ), role
    return None, role


async def api(request: Request, handler: ApiHandler, *, write: bool = False) -> Response:
    """Auth, then the handler on the admin's connection; every refusal and failure answers JSON."""
    refused, role = refusal(request, write=write)
    if refused is not None:
        return refused
    rt = request.app.state.runtime
    if rt.problem or not rt.settings.database_url:
        return error(request, 503, "misconfigured", misconfigured_body()["detail"])  # detail in the log only
    try:
        async with tx.connection(rt.settings.database_url) as conn:
            return await handler(request, conn, role)
    except QueryTimeout as exc:
        return error(request, 503, "unavailable", str(exc), {"Retry-After": "5"})
    except DatabaseUnavailable as exc:
        logs.error("admin_database_unavailable", path=request.url.path, detail=str(exc))
        return error(
            request,
            503,
            "database_unavailable",
            "the database cannot be reached; try again later",
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    except psycopg.DataError as exc:  # e.g. a NUL character, which PostgreSQL text cannot hold
        return error(request, 400, "bad_request", f"expected values PostgreSQL can store, got: {type(exc).__name__}")
    except CrontickError as exc:  # BadRequest, BadCursor, and the store's own argument checks
        return error(request, 400, "bad_request", str(exc))
