"""The admin: server-rendered pages under /admin and the JSON API under /api/admin, mounted by crontick.app."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import lru_cache
from importlib import import_module, resources
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

if TYPE_CHECKING:
    from .session import authorize

__all__ = ["authorize", "routes"]


def __getattr__(name: str) -> Any:
    """`crontick.admin.authorize`, imported on first use: the tick's cold start never loads the admin's sessions."""
    if name == "authorize":
        from .session import authorize

        return authorize
    raise AttributeError(f"module 'crontick.admin' has no attribute {name!r}")


async def _home(request: Request) -> Response:
    return RedirectResponse("/admin", 302)


@lru_cache(maxsize=1)
def _css() -> bytes:
    return resources.files("crontick.admin").joinpath("static", "admin.css").read_bytes()


async def _unknown(request: Request) -> Response:
    from .view import error

    return error(request, 404, "not_found", f"nothing at {request.url.path}; the admin starts at /admin")


async def _stylesheet(request: Request) -> Response:
    from .session import secure_headers

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
    """A page and its JSON twin at the same path plus `.json`."""
    endpoint = _lazy(module, name)
    return [Route(path, endpoint, methods=["GET"]), Route(path + ".json", endpoint, methods=["GET"])]


def routes(runtime: Any = None) -> list[BaseRoute]:
    """Every admin route: `GET /` sends people to the dashboard; the pages; the static CSS; the JSON API."""
    from . import api

    found: list[BaseRoute] = [
        Route("/", _home, methods=["GET"]),
        *_page("/admin", "pages", "failed"),
        *_page("/admin/jobs", "pages", "jobs"),
        *_page("/admin/jobs/{id:int}", "pages", "job"),
        *_page("/admin/reminders", "pages", "reminders"),
        *_page("/admin/ticks", "pages", "ticks"),
        *_page("/admin/overview", "pages", "overview"),
        *_page("/admin/schedules", "schedules_page", "schedules"),
        *_page("/admin/hooks", "hooks_alerts_page", "hooks"),
        *_page("/admin/alerts", "hooks_alerts_page", "alerts"),
        Route("/admin/login", _lazy("actions", "login_form"), methods=["GET"]),
        Route("/admin/login", _lazy("actions", "login"), methods=["POST"]),
        Route("/admin/logout", _lazy("actions", "logout"), methods=["POST"]),
        Route("/admin/jobs/bulk-retry", _lazy("actions", "bulk_retry"), methods=["POST"]),
        Route("/admin/jobs/bulk-retry/continue", _lazy("actions", "bulk_continue"), methods=["GET"]),
        Route("/admin/jobs/{id:int}/{verb}", _lazy("actions", "job_action"), methods=["POST"]),
        Route("/admin/reminders/{booking_id:int}/{kind}/retry", _lazy("actions", "reminder_retry"), methods=["POST"]),
        Route("/admin/static/admin.css", _stylesheet, methods=["GET"]),
    ]
    # Last: any other /admin path is a 404 that still carries the admin's headers.
    return [*found, *api.routes(), Route("/admin/{rest:path}", _unknown, methods=["GET", "POST"])]
