"""Calling the live app's tick endpoint, and what every refusal must look like."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import httpx
import pytest

TICK_PATH = "/api/cron/tick"


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


class LogLines(logging.Handler):
    """Every line the `crontick` logger writes (it does not propagate, so caplog misses it)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def reasons(self, start: int = 0) -> str:
        """The `reason` of each line logged from line `start` on, decoded: the lines are JSON, so quotes are escaped."""
        return "\n".join(str(json.loads(line).get("reason", "")) for line in self.lines[start:])

    def refusals(self, since: int = 0) -> str:
        """The reasons logged for refused ticks (decoded from their JSON lines): they name the failed check,
        never the credential."""
        events = (json.loads(line) for line in self.lines[since:])
        return "\n".join(str(e.get("reason")) for e in events if e.get("event") == "tick_refused")


@pytest.fixture
def crontick_log() -> Iterator[LogLines]:
    handler = LogLines()
    logger = logging.getLogger("crontick")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
