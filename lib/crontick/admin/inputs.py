"""What the admin reads from a request, each within its bounds: a form or a JSON body (at most MAX_BODY_BYTES),
and the API's query parameters and path ids, or a 400.

The rules for a value (an id, a JSON filter, text) are crontick.admin.params', shared with the pages.
A page's bad value is a params.BadParameter (answered 400 `bad_parameter`), the API's a BadRequest
(answered 400 `bad_request`); a form over the cap is a BodyTooLarge (413), a JSON body over it a BadRequest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request

from crontick.admin import params
from crontick.admin.params import BadParameter
from crontick.admin.tx import MAX_LIMIT
from crontick.errors import CrontickError
from crontick.http.body import BodyTooLarge, declared_too_large, read_body_capped

MAX_BODY_BYTES = 64 * 1024
FORM_MAX_FIELDS = 32
MAX_ID = params.MAX_ID
DEFAULT_LIMIT = 50


class BadRequest(CrontickError):
    """A query parameter, path segment or body the API cannot use; answered 400."""


# -- bodies -------------------------------------------------------------------------------------


async def form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the first of each name), read once per request.

    Read through the capped reader: a Content-Length over MAX_BODY_BYTES is refused before a
    byte of the body is read, and a body without one is cut off as soon as it passes the cap
    (BodyTooLarge, answered 413). Parsed here rather than by Starlette, whose form parser needs
    the python-multipart package: the admin's forms are small and upload no files.
    """
    cached: dict[str, str] | None = getattr(request.state, "admin_form", None)
    if cached is None:
        body = await read_body_capped(request, MAX_BODY_BYTES)
        text = body.decode("utf-8", "replace")
        try:
            fields = parse_qs(text, keep_blank_values=True, max_num_fields=FORM_MAX_FIELDS)
        except ValueError:  # more fields than any admin form has; never quote the body (it may hold a secret)
            raise BadParameter("form", f"at most {FORM_MAX_FIELDS} fields", f"{text.count('&') + 1} fields") from None
        cached = {k: v[0] for k, v in fields.items()}
        request.state.admin_form = cached
    return cached


def over_cap(request: Request) -> bool:
    """True when the body's declared length is already over the cap: it is refused unread."""
    return declared_too_large(request, MAX_BODY_BYTES)


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


def bulk_filter(body: Mapping[str, Any]) -> tuple[str | None, dict[str, Any] | None, int | None, int | None]:
    """A bulk action's frozen filter from its JSON body: (type, payload, max_id, after_id)."""
    type_ = body.get("type")
    payload = body.get("payload")
    if type_ is not None and not isinstance(type_, str) or payload is not None and not isinstance(payload, dict):
        raise BadRequest("type, payload: expected a string and a JSON object (or null)")
    max_id, after_id = body.get("max_id"), body.get("after_id")
    for name, value in (("max_id", max_id), ("after_id", after_id)):
        if value is not None and (type(value) is not int or not 0 <= value <= MAX_ID):
            raise BadRequest(f"{name}: expected an integer from 0 to {MAX_ID} or null, got: {str(value)[:40]}")
    return text(type_, "type"), payload, max_id, after_id


# -- the API's values ---------------------------------------------------------------------------


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
