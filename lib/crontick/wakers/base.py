"""What every provider shares: the interface, the answer of a booking, and how a failed call is classified."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from crontick.errors import CrontickError
from crontick.http import client

if TYPE_CHECKING:
    import httpx

# Answers worth trying again later (like crontick.reminders.delivery's): a timeout, throttling, the
# provider's own trouble. Any other 4xx is permanent until the configuration changes.
RETRYABLE_STATUSES = frozenset({408, 425, 429})
# What each delivery carries: crontick.aws runs a tick for this event, and the tick ignores a body
# it does not verify. `instant` says which booking it is.
TICK_EVENT = {"crontick": "tick"}
TICK_PATH = "/api/cron/tick"


class Booked(NamedTuple):
    """The provider accepted the booking (`duplicate`: it already held one with the same key)."""

    message_id: str | None
    duplicate: bool = False


class WakerError(CrontickError):
    """A booking call failed. `retryable`: the same call may succeed later (a timeout, 429, 5xx)."""

    def __init__(self, detail: str, *, retryable: bool) -> None:
        super().__init__(detail)
        self.retryable = retryable


class Provider(Protocol):
    """One provider's one-time delayed delivery of a call of this app's tick."""

    name: str
    horizon: timedelta  # the furthest ahead it takes a booking; later work is booked at the horizon
    granularity_seconds: int  # instants are rounded up to a multiple of this
    min_lead: timedelta  # the least time ahead of now it takes a booking (a past instant is refused)
    target: str  # what it calls (the tick URL, the Lambda ARN, the topic): part of each booking's key

    async def book(self, instant: datetime, key: str, now: datetime) -> Booked:
        """Book one call at `instant` (UTC, on the granularity) under `key`; WakerError when it fails. `now` is
        the database's clock, for a provider that takes a delay rather than an instant."""
        ...


class Cancels(Protocol):
    """A provider that can delete a booking it accepted (crontick.wakers.booking cancels superseded ones)."""

    async def cancel(self, key: str, message_id: str | None) -> None:
        """Delete the booking of `key` (its `message_id`: what book() answered, stored on the booking's row in the
        statement that records it); WakerError when it fails. Gone already
        (delivered, deleted) is not a failure."""
        ...


def tick_body(instant: datetime) -> bytes:
    return json.dumps({**TICK_EVENT, "instant": instant.isoformat()}, separators=(",", ":")).encode()


def timeout_of(seconds: float) -> client.TimeoutTuple:
    return (seconds, seconds, seconds, seconds)


async def send(method: str, url: str, *, timeout: float, **kwargs: Any) -> httpx.Response:
    """One bounded call with the short timeout; a transport error or timeout is a retryable WakerError."""
    import httpx

    try:
        return await client.bounded_request(method, url, timeout=timeout_of(timeout), **kwargs)
    except httpx.TimeoutException:
        raise WakerError(f"no answer within {timeout:g} s from {_where(url)}", retryable=True) from None
    except (httpx.HTTPError, client.UnreadableBody) as exc:
        raise WakerError(f"{type(exc).__name__} calling {_where(url)}", retryable=True) from None


def failure(response: httpx.Response, what: str) -> WakerError:
    """The WakerError of an answer that is not a success: retryable for 408, 425, 429 and 5xx."""
    status = response.status_code
    retryable = status in RETRYABLE_STATUSES or status >= 500
    excerpt = response.text[:200].replace("\n", " ")
    return WakerError(f"{what} answered {status}: {excerpt}", retryable=retryable)


def json_field(response: httpx.Response, name: str) -> str | None:
    """A string field of a JSON object answer, or None when the answer is not one."""
    try:
        data = response.json()
    except ValueError:
        return None
    value = data.get(name) if isinstance(data, dict) else None
    return str(value) if value is not None else None


def _where(url: str) -> str:
    """The scheme and host of a URL: enough to say who did not answer, never a path or a token."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
