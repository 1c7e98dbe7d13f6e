"""What the OpenAPI document says about one admin API route, declared on the route itself (crontick.admin.api)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

# A schema is the name of one in crontick.admin.schemas.components() (the document refers to it
# with $ref) or, for a one-off such as {"type": "string"}, the JSON Schema itself.
Schema = str | dict[str, Any]


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
        """The same operation, answering these error statuses too (what a guard in front of it answers)."""
        return self._replace(errors=tuple(sorted({*self.errors, *errors})))


class ApiRoute(Route):
    """A Starlette Route that carries its Operation: the document is generated from these routes, so a
    route cannot be added to the API without saying what it answers."""

    def __init__(self, path: str, endpoint: Callable[[Request], Awaitable[Response]], method: str, doc: Operation):
        super().__init__(path, endpoint, methods=[method])
        self.doc = doc
