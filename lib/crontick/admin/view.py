"""What every admin request shares: the session gate, the display zone, and answering as HTML or JSON."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from crontick import logs
from crontick.admin import actor, params, render, session, signouts, store
from crontick.admin.params import BadParameter
from crontick.admin.session import Session
from crontick.errors import ConfigError, DatabaseUnavailable, QueryTimeout
from crontick.http import mount
from crontick.http.body import BodyTooLarge, declared_too_large, misconfigured_body, read_body_capped
from crontick.settings import Settings

NAV = (
    ("failed", "/admin", "Failed"),
    ("jobs", "/admin/jobs", "Jobs"),
    ("reminders", "/admin/reminders", "Reminders"),
    ("ticks", "/admin/ticks", "Ticks"),
    ("schedules", "/admin/schedules", "Schedules"),
    ("groups", "/admin/groups", "Groups"),
    ("hooks", "/admin/hooks", "Hooks"),
    ("alerts", "/admin/alerts", "Alerts"),
    ("overview", "/admin/overview", "Overview"),
    ("audit", "/admin/audit", "Audit"),
)
REFRESH_SECONDS = 30
FORM_MAX_BYTES = 64 * 1024
FORM_MAX_FIELDS = 32


async def form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the first of each name), read once per request.

    Read through the capped reader: a Content-Length over FORM_MAX_BYTES is refused before a
    byte of the body is read, and a body without one is cut off as soon as it passes the cap
    (BodyTooLarge, answered 413 by `too_large`). Parsed here rather than by Starlette, whose form
    parser needs the python-multipart package: the admin's forms are small and upload no files.
    """
    cached: dict[str, str] | None = getattr(request.state, "admin_form", None)
    if cached is None:
        body = await read_body_capped(request, FORM_MAX_BYTES)
        text = body.decode("utf-8", "replace")
        try:
            fields = parse_qs(text, keep_blank_values=True, max_num_fields=FORM_MAX_FIELDS)
        except ValueError:  # more fields than any admin form has; never quote the body (it may hold a secret)
            raise BadParameter("form", f"at most {FORM_MAX_FIELDS} fields", f"{text.count('&') + 1} fields") from None
        cached = {k: v[0] for k, v in fields.items()}
        request.state.admin_form = cached
    return cached


def form_too_large(request: Request) -> bool:
    """True when the form's declared length is already over the cap: answer `too_large` unread."""
    return declared_too_large(request, FORM_MAX_BYTES)


def too_large(request: Request) -> Response:
    """413, as JSON or a page; the connection is closed, so the rest of the upload is never read."""
    response = error(
        request, 413, "body_too_large", f"expected a form of at most {FORM_MAX_BYTES} bytes; admin forms are small"
    )
    response.headers["Connection"] = "close"
    return response


def bad_parameter(request: Request, exc: BadParameter) -> Response:
    return error(request, 400, "bad_parameter", str(exc))


class View:
    """One admin request that passed the gate: who asks, in which zone, and how the answer is wanted."""

    def __init__(self, request: Request, settings: Settings, sess: Session) -> None:
        self.request = request
        self.settings = settings
        self.session = sess
        self.root = mount.prefix(request)  # "" at the root, "/ops" when the host app mounts crontick there
        self.now = datetime.now(UTC)
        self.tz_name = request.query_params.get("tz", "")
        tz, self.tz_error = params.zone(self.tz_name)  # BadParameter for a value that cannot be a zone
        if self.tz_error:
            self.tz_name = ""
        self.clock = render.Clock(tz, self.now)
        self.refresh = params.choice(request.query_params.get("refresh"), "refresh", (str(REFRESH_SECONDS),)) != ""
        self.json = wants_json(request)
        self.flash = session.take_flash(request, settings, sess)

    def connection(self) -> AbstractAsyncContextManager[Any]:
        """The admin's own database connection (apart from the tick's), for this request's turn."""
        url = self.settings.require_database_url()
        return store.connection(url)

    def url(self, path: str) -> str:
        """One of the admin's paths (`/admin/jobs`) under the mount prefix: every href, action and src goes through here or `link`."""
        return self.root + path

    def link(self, path: str, **params: Any) -> str:
        """A link to one of the admin's paths, under the mount prefix, that keeps the display zone."""
        return render.link(self.url(path), {**params, "tz": self.tz_name})

    def page(self, template: str, data: dict[str, Any], *, title: str, nav: str, status: int = 200) -> Response:
        if self.json:
            return finish(JSONResponse(render.jsonable({**data, "as_of": self.now}), status), self.request)
        context = {
            **data,
            "v": self,
            "title": title,
            "nav": nav,
            "nav_items": NAV,
            "refresh": self.refresh,
            "refresh_seconds": REFRESH_SECONDS,
            "self_url": self.here(),
        }
        response = HTMLResponse(render.render(template, context), status)
        if self.flash is not None:
            response.delete_cookie(session.flash_cookie_name(self.request), path=session.admin_path(self.request))
        return finish(response, self.request)

    def here(self, **changes: Any) -> str:
        """This page's URL with some query parameters changed (None removes one); the path has the prefix already."""
        params: dict[str, Any] = dict(self.request.query_params)
        params.update(changes)
        return render.link(self.request.url.path.removesuffix(".json"), params)


def wants_json(request: Request) -> bool:
    return request.url.path.endswith(".json") or "application/json" in request.headers.get("accept", "")


def finish(response: Response, request: Request) -> Response:
    session.secure_headers(response)
    return response


def error(request: Request, status: int, code: str, detail: str) -> Response:
    """A refusal: JSON for scripts (the project's error shape), a short page for people."""
    if wants_json(request):
        return finish(JSONResponse({"error": code, "detail": detail}, status), request)
    html = render.render(
        "error.html", {"status": status, "code": code, "detail": detail, "root": mount.prefix(request)}
    )
    return finish(HTMLResponse(html, status), request)


Handler = Callable[[View], Awaitable[Response]]


async def gate(request: Request, handler: Handler, *, action: bool = False) -> Response:
    """Run `handler` for a signed-in person; 404 while the admin is closed, login redirect otherwise."""
    runtime = request.app.state.runtime
    settings: Settings = runtime.settings
    if runtime.problem:
        # Before sign-in the caller may be anyone: the detail is in the log only.
        return error(request, 503, "misconfigured", misconfigured_body()["detail"])
    if not session.admin_open(settings):
        return error(
            request, 404, "not_found", "the admin is closed: set CRONTICK_ADMIN_SECRET (32+ characters) to open it"
        )
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
            if wants_json(request) or request.method != "GET":
                return error(request, 401, "unauthorized", f"sign in at {mount.url(request, '/admin/login')} first")
            target = render.link(
                mount.url(request, "/admin/login"),
                {"next": request.url.path + (f"?{request.url.query}" if request.url.query else "")},
            )
            return finish(RedirectResponse(target, 303), request)
        if action:
            if form_too_large(request):
                return too_large(request)
            refusal = await _csrf_refusal(request, sess)
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


async def _live_session(request: Request, settings: Settings) -> Session | None:
    """The request's session, unless it was signed out: one primary-key read, made only for a
    cookie whose signature holds (a forged or junk cookie never reaches the database)."""
    sess = await session.current(request, settings)
    if sess is None or sess.id is None:
        return sess
    async with store.connection(settings.require_database_url()) as conn:
        ended = await signouts.signed_out(conn, sess.id)
    return None if ended else sess


async def _csrf_refusal(request: Request, sess: Session) -> Response | None:
    if not sess.can_act:
        return error(request, 403, "read_only", "the viewer role can look but not act; sign in with the admin secret")
    given = (await form(request)).get("csrf", "")
    if not session.token_ok(sess, given):
        logs.warning("admin_csrf_refused", reason="bad_token", path=request.url.path)
        return error(
            request, 403, "bad_csrf_token", "the form's token is missing or stale; reload the page and try again"
        )
    return None
