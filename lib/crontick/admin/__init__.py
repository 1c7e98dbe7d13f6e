"""The admin: server-rendered pages under /admin and the JSON API under /api/admin, mounted by crontick.app.

Every route path here is crontick's own; a host app may mount crontick under a prefix (`/ops`),
and every URL the admin writes (links, form actions, redirects, cookie paths) goes through
crontick.http.mount so that it stays under that prefix.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import lru_cache
from importlib import import_module, resources
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from crontick.http import mount

if TYPE_CHECKING:
    from crontick.admin.session import Actor, authorize

__all__ = ["Actor", "authorize", "routes"]


def __getattr__(name: str) -> Any:
    """`crontick.admin.authorize` and `Actor`, imported on first use: the tick's cold start never loads the admin's sessions."""
    if name in ("authorize", "Actor"):
        from crontick.admin import session

        return getattr(session, name)
    raise AttributeError(f"module 'crontick.admin' has no attribute {name!r}")


async def _home(request: Request) -> Response:
    return RedirectResponse(mount.url(request, "/admin"), 302)


@lru_cache(maxsize=1)
def _css() -> bytes:
    return resources.files("crontick.admin").joinpath("static", "admin.css").read_bytes()


async def _unknown(request: Request) -> Response:
    from crontick.admin.view import error

    return error(
        request, 404, "not_found", f"nothing at {request.url.path}; the admin starts at {mount.url(request, '/admin')}"
    )


async def _stylesheet(request: Request) -> Response:
    from crontick.admin.session import secure_headers

    return secure_headers(Response(_css(), media_type="text/css"))


Endpoint = Callable[[Request], Awaitable[Response]]


def _lazy(module: str, name: str) -> Endpoint:
    """An endpoint whose module is imported on its first request: the tick and health functions,
    which build the same app on their cold start, never pay for the admin's pages."""

    async def endpoint(request: Request) -> Response:
        handler: Endpoint = getattr(import_module(f"crontick.admin.{module}"), name)
        return await handler(request)

    endpoint.__name__ = name
    return endpoint


def _page(path: str, module: str, name: str) -> list[Route]:
    """A page and its JSON twin at the same path plus `.json` (first: `{id}` would take `5.json` whole)."""
    endpoint = _lazy(module, name)
    return [Route(path + ".json", endpoint, methods=["GET"]), Route(path, endpoint, methods=["GET"])]


def routes(runtime: Any = None) -> list[BaseRoute]:
    """Every admin route: `GET /` sends people to the dashboard; the pages; the static CSS; the JSON API."""
    from crontick.admin import api

    # Ids are plain path segments, parsed by the page (crontick.admin.params.row_id): Starlette's
    # `{id:int}` calls int() while routing, which raises past 4,300 digits, before any handler.
    found: list[BaseRoute] = [
        Route("/", _home, methods=["GET"]),
        *_page("/admin", "pages", "failed"),
        *_page("/admin/jobs", "pages", "jobs"),
        *_page("/admin/jobs/{id}", "pages", "job"),
        *_page("/admin/reminders", "pages", "reminders"),
        *_page("/admin/ticks", "pages", "ticks"),
        *_page("/admin/overview", "pages", "overview"),
        *_page("/admin/schedules", "schedules_page", "schedules"),
        *_page("/admin/groups", "groups_page", "groups"),
        *_page("/admin/hooks", "hooks_alerts_page", "hooks"),
        *_page("/admin/alerts", "hooks_alerts_page", "alerts"),
        *_page("/admin/audit", "ops_pages", "audit"),
        Route("/admin/login", _lazy("actions", "login_form"), methods=["GET"]),
        Route("/admin/login", _lazy("actions", "login"), methods=["POST"]),
        Route("/admin/logout", _lazy("actions", "logout"), methods=["POST"]),
        Route("/admin/jobs/bulk-retry", _lazy("actions", "bulk_retry"), methods=["POST"]),
        Route("/admin/jobs/bulk-retry/continue", _lazy("actions", "bulk_continue"), methods=["GET"]),
        Route("/admin/jobs/bulk-run-now", _lazy("ops_pages", "bulk_run_now"), methods=["POST"]),
        Route("/admin/jobs/{id}/{verb}", _lazy("actions", "job_action"), methods=["POST"]),
        Route("/admin/schedules/{name}/{verb}", _lazy("ops_pages", "schedule_action"), methods=["POST"]),
        Route("/admin/flow/{verb}", _lazy("groups_page", "flow_action"), methods=["POST"]),
        Route("/admin/reminders/{booking_id}/{kind}/retry", _lazy("actions", "reminder_retry"), methods=["POST"]),
        Route("/admin/static/admin.css", _stylesheet, methods=["GET"]),
        Route("/api/metrics", _lazy("metrics", "endpoint"), methods=["GET"]),  # Prometheus, with an admin secret
    ]
    # Last: any other /admin path is a 404 that still carries the admin's headers.
    return [*found, *api.routes(), Route("/admin/{rest:path}", _unknown, methods=["GET", "POST"])]
