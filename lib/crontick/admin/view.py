"""What every admin page shares: the request that passed the gate (its session, display zone and how the answer is
wanted), its panels' reads, its cursor, and the confirmation and the 303 of every form."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from crontick import logs
from crontick.admin import params, render, session, tx
from crontick.admin.answer import finish, wants_json
from crontick.admin.session import Session
from crontick.errors import BadCursor, QueryTimeout
from crontick.http import mount
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
PAGE_ROWS = 50

T = TypeVar("T")


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
        return tx.connection(url)

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

    def cursor(self) -> int | None:
        """The page's cursor; a cursor we did not issue starts from the newest row again."""
        try:
            return tx.decode_cursor(self.request.query_params.get("cursor") or None)
        except BadCursor:
            return None

    async def panel(self, read: Callable[[Any], Awaitable[T]]) -> T | None:
        """One panel's reads (the store runs them in one short read-only transaction); None, shown as
        "unavailable", when they hit the statement timeout."""
        try:
            async with self.connection() as conn:
                return await read(conn)
        except QueryTimeout as exc:
            logs.warning("admin_panel_timeout", path=self.request.url.path, detail=str(exc))
            return None

    def done(self, message: str, back: str) -> Response:
        """A form's end: a 303 back, with `message` shown once on the page it lands on."""
        response = RedirectResponse(back, 303)
        session.set_flash(response, self.request, self.settings, self.session, message)
        return finish(response, self.request)

    def confirm(self, **context: Any) -> Response:
        """A form's confirmation page: `heading`, `question`, `action_url`, `fields`, `button`, `back`, …"""
        return self.page(
            "confirm.html",
            {"details": [], "button_class": "primary", **context},
            title=context["heading"],
            nav=context.pop("nav", "jobs"),
        )
