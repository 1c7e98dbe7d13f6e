"""What every tick-endpoint test checks the same way: the auth header and the JSON error shape."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import httpx

from crontick.settings import Settings
from tests.conftest import TEST_SECRET

TICK = "/api/cron/tick"
HEALTH = "/api/health"
AUTH = {"Authorization": f"Bearer {TEST_SECRET}"}
LiveApp = Callable[[Settings | None], AbstractContextManager[str]]


def assert_json_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Every 4xx/5xx is {"error": code, "detail": sentence}; never a traceback, never the secret."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["error"] == code
    assert isinstance(body["detail"], str) and body["detail"]
    assert "Traceback" not in response.text and TEST_SECRET not in response.text
    return body
