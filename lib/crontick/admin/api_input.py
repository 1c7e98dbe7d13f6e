"""What the JSON admin API reads from a request (query parameters, path ids, JSON bodies), or a 400 BadRequest.

The rules for a value (an id, a JSON filter, text) are crontick.admin.params', shared with the pages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from crontick.admin import params
from crontick.admin.store import MAX_LIMIT
from crontick.errors import CrontickError
from crontick.http.body import BodyTooLarge, read_body_capped

MAX_BODY_BYTES = 64 * 1024
MAX_ID = params.MAX_ID
DEFAULT_LIMIT = 50


class BadRequest(CrontickError):
    """A query parameter, path segment or body the API cannot use; answered 400."""


def integer(text: str | None, name: str, *, default: int | None = None, low: int = 1, high: int = MAX_ID) -> int | None:
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer from {low} to {high}, got: {text[:40]!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name}: expected an integer from {low} to {high}, got: {value}")
    return value


def limit(query: Mapping[str, str]) -> int:
    """`limit`: rows per page, 1 to MAX_LIMIT, DEFAULT_LIMIT when absent."""
    return integer(query.get("limit"), "limit", default=DEFAULT_LIMIT, high=MAX_LIMIT) or DEFAULT_LIMIT


def text(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if "\x00" in value or len(value) > 200:
        raise BadRequest(f"{name}: expected text up to 200 characters without NUL, got: {value[:40]!r}")
    return value


def flow_name(value: str, param: str) -> str:
    """A group, job type or rate limit by name (a path segment, or the groups' cursor, the last group_key of a
    page): crontick.admin.params.name_problem's rule, else a 400."""
    if problem := params.name_problem(value):
        raise BadRequest(f"{param}: {problem}")
    return value


def json_object(value: str | None, name: str) -> dict[str, Any] | None:
    try:  # depth, NaN and characters jsonb refuses are checked there too
        return params.json_object(value, name)
    except params.BadParameter as exc:
        raise BadRequest(str(exc)) from None


def job_id(request: Request) -> int | None:
    """The {id} path segment, or None (a 404) if it cannot be a job id."""
    return params.row_id(request.path_params["id"])  # never int() of 4,301 digits, which raises


async def body(request: Request) -> dict[str, Any]:
    """The JSON object sent, at most MAX_BODY_BYTES; an empty body is {}."""
    try:
        raw = await read_body_capped(request, MAX_BODY_BYTES)
    except BodyTooLarge:
        raise BadRequest(f"body: expected at most {MAX_BODY_BYTES} bytes of JSON, got more") from None
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest("body: expected a JSON object, got text that is not JSON") from None
    if not isinstance(value, dict):
        raise BadRequest(f"body: expected a JSON object, got: {type(value).__name__}")
    try:
        params.check_json(value, "body")
    except params.BadParameter as exc:
        raise BadRequest(str(exc)) from None
    return value
