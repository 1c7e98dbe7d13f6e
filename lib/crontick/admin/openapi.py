"""The OpenAPI 3.1 document of the JSON admin API, generated from its routes (GET /api/admin/openapi.json)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from crontick.admin import answer, gate
from crontick.admin.routing import ApiRoute, Operation, Param, Schema
from crontick.admin.schemas import ERRORS, components, ref
from crontick.errors import CrontickError
from crontick.http import mount


class Undocumented(CrontickError):
    """A route of the admin API whose declaration the document cannot be built from."""


async def endpoint(request: Request) -> Response:
    """The OpenAPI document needs a secret like every route, but no database.

    Its paths are crontick's own (`/api/admin/jobs`); under a mount prefix, `servers` names the
    prefix (`[{"url": "/ops"}]`), which OpenAPI puts in front of every path.
    """
    refused, _ = gate.refusal(request)
    if refused is not None:
        return refused
    root = mount.prefix(request)
    return answer.api({**_document(), "servers": [{"url": root}]} if root else _document())


@lru_cache(maxsize=1)
def _document() -> dict[str, Any]:
    """Built on its first request from the API's routes (crontick.admin.api_routes)."""
    from crontick.admin import api_routes

    return document(api_routes())


def document(routes: Iterable[BaseRoute]) -> dict[str, Any]:
    """The whole document: each path and method is a route's, and says what that route's Operation
    declares; every route needs `Authorization: Bearer <admin or viewer secret>`."""
    schemas = components()
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if not isinstance(route, ApiRoute):
            raise Undocumented(f"expected an ApiRoute that declares its Operation, got: {route!r}")
        _check(route, schemas)
        item = paths.setdefault(route.path_format, {})
        # Starlette answers HEAD wherever it answers GET; the document leaves that implied.
        for method in sorted((route.methods or set()) - {"HEAD"}):
            if method.lower() in item:
                raise Undocumented(f"expected one route per method and path, got two for {method} {route.path}")
            item[method.lower()] = _operation(route.doc)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "crontick admin API",
            "version": "1",
            "description": "Bearer CRONTICK_ADMIN_SECRET for everything; CRONTICK_ADMIN_VIEWER_SECRET for reads. "
            'Every 4xx/5xx body is {"error": code, "detail": sentence}.',
        },
        "components": {"schemas": schemas, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": paths,
    }


def _check(route: ApiRoute, schemas: dict[str, Any]) -> None:
    """The declaration matches its route: the same path parameters, known schema names and error statuses."""
    declared = [p.name for p in route.doc.path]
    if sorted(declared) != sorted(route.param_convertors):
        raise Undocumented(
            f"expected {route.path}'s Operation to declare the path parameters {sorted(route.param_convertors)},"
            f" got: {declared}"
        )
    named = [route.doc.answer[0], route.doc.body, *(p.schema for p in (*route.doc.query, *route.doc.path))]
    unknown = [name for name in named if isinstance(name, str) and name not in schemas]
    if unknown:
        raise Undocumented(f"expected schemas named in crontick.admin.schemas, got {unknown} for {route.path}")
    if not set(route.doc.errors) <= set(ERRORS):
        raise Undocumented(f"expected error statuses among {sorted(ERRORS)}, got {route.doc.errors} for {route.path}")


def _schema(schema: Schema) -> dict[str, Any]:
    return ref(schema) if isinstance(schema, str) else schema


def _json(schema: Schema, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _schema(schema)}}}


def _parameter(param: Param, where: str) -> dict[str, Any]:
    out = {"name": param.name, "in": where, "required": where == "path", "schema": _schema(param.schema)}
    return {**out, "description": param.description} if param.description else out


def _operation(doc: Operation) -> dict[str, Any]:
    out: dict[str, Any] = {"summary": doc.summary}
    parameters = [*(_parameter(p, "path") for p in doc.path), *(_parameter(p, "query") for p in doc.query)]
    if parameters:
        out["parameters"] = parameters
    if doc.body is not None:  # read by crontick.admin.params.body, where an empty body means {}
        out["requestBody"] = {"required": False, "content": {"application/json": {"schema": ref(doc.body)}}}
    out["responses"] = {
        "200": _json(*doc.answer),
        **{str(code): _json("Error", ERRORS[code]) for code in sorted(doc.errors)},
    }
    return out
