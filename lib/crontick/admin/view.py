"""What every admin request shares: the session gate, the display zone, and answering as HTML or JSON."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from .. import logs
from ..errors import DatabaseUnavailable
from ..http_body import misconfigured_body
from ..settings import Settings
from . import render, session, store
from .session import Session

NAV = (
    ("failed", "/admin", "Failed"),
    ("jobs", "/admin/jobs", "Jobs"),
    ("reminders", "/admin/reminders", "Reminders"),
    ("ticks", "/admin/ticks", "Ticks"),
    ("schedules", "/admin/schedules", "Schedules"),
    ("hooks", "/admin/hooks", "Hooks"),
    ("alerts", "/admin/alerts", "Alerts"),
    ("overview", "/admin/overview", "Overview"),
)
REFRESH_SECONDS = 30
FORM_MAX_BYTES = 64 * 1024


async def form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the first of each name), read once per request.

    Parsed here rather than by Starlette, whose form parser needs the python-multipart package:
    the admin's forms are small and never upload files.
    """
    cached: dict[str, str] | None = getattr(request.state, "admin_form", None)
    if cached is None:
        body = await request.body()
        text = body[:FORM_MAX_BYTES].decode("utf-8", "replace")
        cached = {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}
        request.state.admin_form = cached
    return cached


class View:
    """One admin request that passed the gate: who asks, in which zone, and how the answer is wanted."""

    def __init__(self, request: Request, settings: Settings, sess: Session) -> None:
        self.request = request
        self.settings = settings
        self.session = sess
        self.now = datetime.now(UTC)
        self.tz_name = request.query_params.get("tz", "")
        tz, self.tz_error = render.zone(self.tz_name)
        if self.tz_error:
            self.tz_name = ""
        self.clock = render.Clock(tz, self.now)
        self.json = wants_json(request)
        self.flash = session.take_flash(request, settings, sess)

    def connection(self) -> AbstractAsyncContextManager[Any]:
        """The admin's own database connection (apart from the tick's), for this request's turn."""
        url = self.settings.require_database_url()
        return store.connection(url)

    def link(self, path: str, **params: Any) -> str:
        """A link that keeps the display zone."""
        return render.link(path, {**params, "tz": self.tz_name})

    def page(self, template: str, data: dict[str, Any], *, title: str, nav: str, status: int = 200) -> Response:
        if self.json:
            return finish(JSONResponse(render.jsonable({**data, "as_of": self.now}), status), self.request)
        refresh = self.request.query_params.get("refresh") == "30"
        context = {
            **data,
            "v": self,
            "title": title,
            "nav": nav,
            "nav_items": NAV,
            "refresh": refresh,
            "refresh_seconds": REFRESH_SECONDS,
            "self_url": self.here(),
        }
        response = HTMLResponse(render.render(template, context), status)
        if self.flash is not None:
            response.delete_cookie(session.FLASH_COOKIE, path="/admin")
        return finish(response, self.request)

    def here(self, **changes: Any) -> str:
        """This page's URL with some query parameters changed (None removes one)."""
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
    html = render.render("error.html", {"status": status, "code": code, "detail": detail})
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
    sess = await session.current(request, settings)
    if sess is None:
        if wants_json(request) or request.method != "GET":
            return error(request, 401, "unauthorized", "sign in at /admin/login first")
        target = render.link(
            "/admin/login", {"next": request.url.path + (f"?{request.url.query}" if request.url.query else "")}
        )
        return finish(RedirectResponse(target, 303), request)
    if action:
        refusal = await _csrf_refusal(request, sess)
        if refusal is not None:
            return refusal
    try:
        return await handler(View(request, settings, sess))
    except DatabaseUnavailable as exc:
        logs.error("admin_database_unavailable", path=request.url.path, detail=str(exc))
        return error(request, 503, "database_unavailable", "the database cannot be reached; try again in a minute")


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
