"""The admin: server-rendered pages under /admin and the JSON API under /api/admin, mounted by crontick.app.

One route table, built from the resources: each package (jobs, reminders, overview, schedules, flow,
feeds, audit, sign_in) declares its pages and forms (`routes()`) and its API routes (`api_routes()`)
with crontick.admin.routing, and holds its `page`, `api` and `store` modules, loaded on their first
request. They share one gate (crontick.admin.gate), one input reader (crontick.admin.inputs) and one
error body (crontick.admin.answer).

Starlette's `Mount` would set the ASGI `root_path` to each mount's path, which crontick reads as the
host app's own mount prefix, so the resources' lists are joined flat. Every route path here is
crontick's own; a host app may mount crontick under a prefix (`/ops`), and every URL the admin
writes (links, form actions, redirects, cookie paths) goes through crontick.http.mount so that it
stays under that prefix.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from crontick.admin import audit, feeds, flow, jobs, overview, reminders, schedules, sign_in
from crontick.admin.routing import REFUSALS, ApiRoute, Operation, guarded, lazy
from crontick.http import mount

if TYPE_CHECKING:
    from crontick.admin.session import Actor, authorize

__all__ = ["Actor", "api_routes", "authorize", "routes"]

# Each resource declares its pages and forms (`routes()`, a page before the forms whose paths its `{id}` would
# also match) and its API routes (`api_routes()`); their routes are tried in this order.
RESOURCES = (jobs, reminders, overview, schedules, flow, feeds, audit, sign_in)


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
    from crontick.admin.answer import error

    return error(
        request, 404, "not_found", f"nothing at {request.url.path}; the admin starts at {mount.url(request, '/admin')}"
    )


async def _stylesheet(request: Request) -> Response:
    from crontick.admin.session import secure_headers

    return secure_headers(Response(_css(), media_type="text/css"))


def api_routes() -> list[ApiRoute]:
    """The JSON admin API under /api/admin, for routes() to mount and the OpenAPI document to describe."""
    document = ApiRoute(
        "/api/admin/openapi.json",
        lazy("openapi:endpoint"),
        "GET",
        Operation("This document", ({"type": "object"}, "OpenAPI 3.1"), errors=REFUSALS),
    )
    return [*(route for resource in RESOURCES for route in resource.api_routes()), document]


def routes(runtime: Any = None) -> list[BaseRoute]:
    """Every admin route: `GET /` sends people to the dashboard; each resource's pages and forms; the static CSS;
    the Prometheus metrics; the JSON API; last, any other /admin path is a 404 that still carries the admin's headers.

    Ids are plain path segments, parsed by the page (crontick.admin.params.row_id): Starlette's
    `{id:int}` calls int() while routing, which raises past 4,300 digits, before any handler.
    """
    return [
        Route("/", _home, methods=["GET"]),
        *(route for resource in RESOURCES for route in resource.routes()),
        Route("/admin/static/admin.css", _stylesheet, methods=["GET"]),
        Route("/api/metrics", guarded("metrics:scrape"), methods=["GET"]),  # Prometheus, with an admin secret
        *api_routes(),
        Route("/admin/{rest:path}", _unknown, methods=["GET", "POST"]),
    ]
