"""Calling the live app's tick endpoint over HTTP, and what every answer checks the same way: the auth
header, a uniform refusal, the JSON error shape."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import httpx

from crontick.settings import Settings
from tests.support.constants import TEST_SECRET

TICK = TICK_PATH = "/api/cron/tick"
HEALTH = "/api/health"
AUTH = {"Authorization": f"Bearer {TEST_SECRET}"}
LiveApp = Callable[[Settings | None], AbstractContextManager[str]]


def tick(
    base: str, *, method: str = "POST", headers: dict[str, str] | None = None, body: bytes = b"", path: str = TICK_PATH
) -> httpx.Response:
    return httpx.request(method, base + path, headers=headers or {}, content=body, timeout=30)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_refused(response: httpx.Response, base: str) -> None:
    """A uniform 401: the same body as a request with no credential at all, whatever check failed."""
    baseline = tick(base)
    assert response.status_code == 401, response.text
    assert response.json() == baseline.json()
    assert response.headers["www-authenticate"] == "Bearer"


def assert_json_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Every 4xx/5xx is {"error": code, "detail": sentence}; never a traceback, never the secret."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["error"] == code
    assert isinstance(body["detail"], str) and body["detail"]
    assert "Traceback" not in response.text and TEST_SECRET not in response.text
    return body
