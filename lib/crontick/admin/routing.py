"""How a resource declares its routes: pages, forms and API routes whose handlers load on their first request.

Every resource package (crontick.admin.jobs, .reminders, …) lists its routes with these helpers in its
`__init__`, and crontick.admin.routes() joins the lists into the one route table. Declaring a route
imports nothing of the resource's pages, API or store: the tick and health functions, which build
the same app on their cold start, never pay for the admin. An API route also carries what the
OpenAPI document says of it (its Operation), so a route cannot be added without saying what it answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import import_module
from typing import Any, NamedTuple

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

Endpoint = Callable[[Request], Awaitable[Response]]

# A schema is the name of one in crontick.admin.schemas.components() (the document refers to it
# with $ref) or, for a one-off such as {"type": "string"}, the JSON Schema itself.
Schema = str | dict[str, Any]

# What the API gate (crontick.admin.gate.api) answers on any route (closed, unauthorised), and on an action (a viewer).
REFUSALS = (401, 503)
WRITE_REFUSALS = (403,)
# What it adds around the handler: 400 for a CrontickError or data PostgreSQL cannot store, 503 for the database.
GUARDED = (400, *REFUSALS)
TEXT = {"type": "string"}


# NamedTuples, not dataclasses: these are built on every cold start (a tick's too), and a frozen
# dataclass costs about 0.7 ms to define, a NamedTuple about 0.1 ms.
class Param(NamedTuple):
    """A query or path parameter: its name, its schema and, for a query parameter, what it selects."""

    name: str
    schema: Schema
    description: str = ""


class Operation(NamedTuple):
    """One route's entry in the document: a summary, the 200 answer (schema, description), the other
    statuses it answers (each with the shared error body), its parameters and its optional JSON body."""

    summary: str
    answer: tuple[Schema, str]
    errors: tuple[int, ...] = ()
    query: tuple[Param, ...] = ()
    path: tuple[Param, ...] = ()
    body: str | None = None

    def answering(self, *errors: int) -> Operation:
        """The same operation, answering these error statuses too (what a gate in front of it answers)."""
        return self._replace(errors=tuple(sorted({*self.errors, *errors})))


class ApiRoute(Route):
    """A Starlette Route that carries its Operation: the document is generated from these routes."""

    def __init__(self, path: str, endpoint: Endpoint, method: str, doc: Operation):
        super().__init__(path, endpoint, methods=[method])
        self.doc = doc


# Shared by the API routes of every resource.
LIMIT = Param("limit", "Limit", "Rows per page.")
CURSOR = Param("cursor", TEXT, "The `next_cursor` of the previous page.")


def handler_of(target: str) -> Any:
    """The function a `"module:name"` target names, inside crontick.admin (`"jobs.page:jobs"`)."""
    module, _, name = target.partition(":")
    return getattr(import_module(f"crontick.admin.{module}"), name)


def lazy(target: str) -> Endpoint:
    """An endpoint whose module is imported on its first request."""

    async def endpoint(request: Request) -> Response:
        handler: Endpoint = handler_of(target)
        return await handler(request)

    return named(endpoint, target)


def named(endpoint: Endpoint, target: str) -> Endpoint:
    """`endpoint`, named after its handler and carrying its `"module:name"` target (a test resolves every one)."""
    endpoint.__name__ = target.partition(":")[2]
    setattr(endpoint, "target", target)  # noqa: B010 (a function has no declared attribute to assign)
    return endpoint


def page(path: str, target: str) -> list[Route]:
    """A page and its JSON twin at the same path plus `.json` (first: `{id}` would take `5.json` whole)."""
    endpoint = lazy(target)
    return [Route(path + ".json", endpoint, methods=["GET"]), Route(path, endpoint, methods=["GET"])]


def route(path: str, target: str, method: str = "POST") -> Route:
    """A route with no JSON twin: a form's target (an action behind a confirmation), or a GET such as the login form."""
    return Route(path, lazy(target), methods=[method])


def guarded(target: str, *, write: bool = False) -> Endpoint:
    """An endpoint behind the API gate: bearer roles, the admin's connection, JSON refusals (crontick.admin.gate.api).
    The handler, `"module:name"`, is called as handler(request, conn, role)."""

    async def endpoint(request: Request) -> Response:
        from crontick.admin import gate

        return await gate.api(request, handler_of(target), write=write)

    return named(endpoint, target)


def api(path: str, target: str, method: str, doc: Operation, *, write: bool = False) -> ApiRoute:
    """A JSON API route behind the API gate, whose Operation also lists what the gate answers."""
    answers = (*GUARDED, *WRITE_REFUSALS) if write else GUARDED
    return ApiRoute(path, guarded(target, write=write), method, doc.answering(*answers))
