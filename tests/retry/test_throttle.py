"""Provider back-off, pure: which exceptions are a provider's throttle, and how long their job is put back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from crontick import retry

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def _status_error(status: int, headers: dict[str, str]) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "https://api.example.com/v1/chat")
    response = httpx.Response(status, headers=headers, request=request)
    return httpx.HTTPStatusError("throttled", request=request, response=response)


class SdkError(Exception):
    """Shaped like openai.RateLimitError and anthropic.RateLimitError: the httpx response as `.response`."""

    def __init__(self, response: Any) -> None:
        super().__init__("rate limited")
        self.response = response


def test_throttle_of_finds_the_response_on_the_exception_or_down_its_chain() -> None:
    assert retry.throttle_of(_status_error(429, {"Retry-After": "7"})) == retry.Throttle(429, "7", None)
    sdk = SdkError(httpx.Response(503, headers={"retry-after-ms": "250"}))
    assert retry.throttle_of(sdk) == retry.Throttle(503, None, "250")
    try:
        try:
            raise _status_error(429, {"retry-after": "3"})
        except httpx.HTTPStatusError as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as wrapped:
        assert retry.throttle_of(wrapped) == retry.Throttle(429, "3", None)
    assert retry.throttle_of(_status_error(500, {"Retry-After": "7"})) is None
    assert retry.throttle_of(ValueError("no response")) is None
    assert retry.throttle_of(SdkError(object())) is None  # a response without status or headers
    assert retry.throttle_of(SdkError(type("R", (), {"status_code": 429, "headers": {"Retry-After": "9"}})())) == (
        retry.Throttle(429, "9", None)
    )


@pytest.mark.parametrize(
    ("throttle", "rand", "seconds"),
    [
        (retry.Throttle(429, "30", None), 0.0, 30.0),
        (retry.Throttle(429, "30", None), 1.0, 30.9),  # at most 3 % later, never sooner
        (retry.Throttle(429, "0", None), 0.5, 0.0),
        (retry.Throttle(429, format_datetime(NOW + timedelta(seconds=90), usegmt=True), None), 0.0, 90.0),
        (retry.Throttle(503, format_datetime(NOW - timedelta(seconds=90), usegmt=True), None), 0.0, 0.0),
        (retry.Throttle(429, "30", "1500"), 0.0, 1.5),
        (retry.Throttle(429, "30", "junk"), 0.0, 30.0),
        (retry.Throttle(429, "7200", None), 0.0, 3600.0),  # capped at an hour
        (retry.Throttle(429, "7200", None), 1.0, 3708.0),
        (retry.Throttle(429, None, None), 0.0, None),
        (retry.Throttle(429, "soon", None), 0.0, None),
        (retry.Throttle(429, "-5", None), 0.0, None),
        (retry.Throttle(429, "1.5e3", None), 0.0, None),
    ],
)
def test_throttle_snooze_seconds(throttle: retry.Throttle, rand: float, seconds: float | None) -> None:
    got = retry.throttle_snooze_seconds(throttle, NOW, rand)
    assert got == (None if seconds is None else pytest.approx(seconds))
