"""How the admin answers: JSON for the API and scripts, pages for people, and one error body for all of them.

A refusal is `{"error": code, "detail": sentence}`: under /api (the bearer API and /api/metrics) as
the API's JSON (never cached), on a page's `.json` twin or an `Accept: application/json` request as
JSON with the pages' security headers, and for a person as the error page.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from crontick.admin import render, session
from crontick.admin.tx import ActionResult
from crontick.http import mount

# What an action's refusal (ActionResult.error) answers.
ACTION_STATUS = {"not_found": 404, "conflict": 409, "key_taken": 409}


class ApiResponse(JSONResponse):
    """JSON with datetimes as ISO-8601, never cached (admin data is live and private)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, default=_plain, ensure_ascii=False, separators=(",", ":")).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"expected a JSON value, got: {type(value).__name__}")


def api(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """An API answer: JSON, never cached."""
    return ApiResponse(body, status, headers={"Cache-Control": "no-store", **(headers or {})})


def wants_json(request: Request) -> bool:
    return request.url.path.endswith(".json") or "application/json" in request.headers.get("accept", "")


def is_api(request: Request) -> bool:
    """A request to the bearer API (/api/admin, /api/metrics), wherever crontick is mounted."""
    return mount.route_path(request).startswith("/api/")


def finish(response: Response, request: Request) -> Response:
    """A page's answer, with the admin's security headers."""
    session.secure_headers(response)
    return response


def error(request: Request, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Response:
    """The one refusal: JSON for the API and for scripts (the project's error shape), a short page for people."""
    body = {"error": code, "detail": detail}
    if is_api(request):
        return api(body, status, headers)
    if wants_json(request):
        return finish(JSONResponse(body, status, headers), request)
    html = render.render(
        "error.html", {"status": status, "code": code, "detail": detail, "root": mount.prefix(request)}
    )
    return finish(HTMLResponse(html, status, headers), request)


def not_found_job(request: Request) -> Response:
    """The API's 404 for a job id that names no job (or cannot be one)."""
    shown = str(request.path_params["id"])[:40]
    return error(request, 404, "not_found", f"expected an existing job id, got: {shown} (no such job)")


def action(request: Request, result: ActionResult, *, kick: bool = False) -> Response:
    """An API action's answer: the row it changed, or its refusal (404 not_found, 409 conflict or key_taken).
    `kick`: the action made work due (retry, run now, resume), so a tick starts once it is answered."""
    if not result.ok:
        code = result.error or "conflict"
        return error(request, ACTION_STATUS.get(code, 404), code, result.detail)
    response = api(result.row)
    return kicking(request, response) if kick else response


def kicking(request: Request, response: Response) -> Response:
    """`response`, which starts a tick once it is sent, as an inbound event's answer does (crontick.hooks.kick,
    CRONTICK_KICK): for the actions that make work due now (Retry, Run now, a resumed pause). Every admin action's
    transaction has committed before its answer is sent, so the tick finds the work; without this it waited for the
    scheduler (job 1675 was still pending 12 s after Retry, issue 35)."""
    from starlette.background import BackgroundTask

    from crontick.hooks.kick import after_commit

    response.background = BackgroundTask(after_commit, request.app.state.runtime)
    return response
