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
from crontick.text import KEY_MAX_CHARS, key_too_long

MAX_BODY_BYTES = 64 * 1024
MAX_ID = params.MAX_ID
DEFAULT_LIMIT = 50
TEXT_MAX_CHARS = 200


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


def text(value: str | None, name: str, *, max_chars: int = TEXT_MAX_CHARS) -> str | None:
    if value is None or value == "":
        return None
    if "\x00" in value or len(value) > max_chars:
        raise BadRequest(f"{name}: expected text up to {max_chars} characters without NUL, got: {value[:40]!r}")
    return value


def path_name(value: str, param: str) -> str:
    """A path segment that names a group, a job type or a rate limit: 1 to KEY_MAX_CHARS characters, the
    longest group_key an enqueue accepts (crontick.text), so every group that has jobs can be paused."""
    if problem := key_too_long("a name", value):
        raise BadRequest(f"{param}: {problem}")
    found = text(value, param, max_chars=KEY_MAX_CHARS)
    if found is None:
        raise BadRequest(f"{param}: expected a name, got an empty one")
    return found


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
