"""How a channel's POST to its provider ended: 2xx, DeliveryFailed (retry), DeliveryUnknown (maybe sent) or PermanentError."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from crontick.errors import CrontickError, PermanentError, RetryableError
from crontick.http import client as http

if TYPE_CHECKING:  # imported where a message is sent: a tick that sends nothing never pays for httpx
    import httpx

RETRYABLE_STATUSES = frozenset({408, 429})
BODY_EXCERPT_BYTES = 500
# The most of a provider's answer read, on the wire and decoded (crontick.http.client reads it).
RESPONSE_MAX_BYTES = http.RESPONSE_MAX_BYTES


class DeliveryFailed(RetryableError):
    """A definite failure worth retrying: the provider answered 408, 429 or 5xx, or no connection was made.

    On 429 and 503 it carries the provider's Retry-After, which the retry then waits out.
    """


class DeliveryUnknown(CrontickError):
    """An ambiguous outcome: the request may have reached the provider (a timeout or a dropped connection after sending)."""


async def post(
    url: str, timeout: float | http.TimeoutTuple, what: str, *, client: httpx.AsyncClient | None = None, **kwargs: Any
) -> httpx.Response:
    """POST and classify: 2xx returns; DeliveryFailed, DeliveryUnknown or PermanentError otherwise.

    The answer is read through http.bounded_request: at most RESPONSE_MAX_BYTES, on the wire and
    decoded. The status decides the outcome. A body that cannot be read with a bound (stacked or
    unknown encodings) is left unread and only changes the excerpt: the provider took the message
    or refused it whatever its body says, and a 2xx's body only ever carries a message id."""
    import httpx

    unread = None
    try:
        response = await http.bounded_request("POST", url, using=client, timeout=timeout, **kwargs)
    except http.UnreadableBody as exc:
        response, unread = exc.answer, str(exc)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        raise DeliveryFailed(
            f"{what}: expected a connection to {public_url(url)}, got: {_describe(exc)}; nothing was sent"
        ) from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise PermanentError(
            f"{what}: expected an http:// or https:// URL, got: {public_url(url)} ({_describe(exc)})"
        ) from exc
    except httpx.TransportError as exc:
        raise DeliveryUnknown(
            f"{what}: expected an answer from {public_url(url)}, got: {_describe(exc)} after the request was sent "
            f"(it may have been delivered)"
        ) from exc
    check_response(response, what, unread)
    return response


def check_response(response: httpx.Response, what: str, unread: str | None = None) -> None:
    """Raise by status: DeliveryFailed for 408/429/5xx, PermanentError for any other non-2xx.
    `unread` says why the body was not read; it then stands in the message for the excerpt."""
    if response.is_success:
        return
    excerpt = f"({unread})" if unread else response.content[:BODY_EXCERPT_BYTES].decode("utf-8", "replace")
    message = f"{what} answered HTTP {response.status_code}: {excerpt}"
    if response.status_code in RETRYABLE_STATUSES or response.status_code >= 500:
        wait = retry_after_seconds(response.headers.get("retry-after")) if response.status_code in (429, 503) else None
        raise DeliveryFailed(message, retry_after_seconds=wait)
    raise PermanentError(message)


# A Retry-After longer than this is capped: a provider (or a typo) cannot park a job for months.
MAX_RETRY_AFTER_SECONDS = 86400.0


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds from now (a Unix time; None: this host's clock): delta-seconds or an HTTP-date;
    None when absent or unreadable (crontick.retry.retry_after_seconds), capped at MAX_RETRY_AFTER_SECONDS."""
    from datetime import UTC, datetime

    from crontick.retry import retry_after_seconds as parsed

    seconds = parsed(value, datetime.fromtimestamp(time.time() if now is None else now, UTC))
    return None if seconds is None else min(seconds, MAX_RETRY_AFTER_SECONDS)


def public_url(url: str) -> str:
    """The URL without credentials, query or fragment, which may carry tokens, for error text."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "(an invalid URL)"
    return str(parsed.copy_with(userinfo=b"", query=None, fragment=None))


def json_field(response: httpx.Response, name: str) -> str | None:
    """The provider's message id, if its 2xx body has one; a body we cannot parse is no failure."""
    try:
        value = response.json().get(name)
    except (ValueError, AttributeError, RecursionError):  # RecursionError: JSON nested deeper than Python parses
        return None
    return str(value) if value is not None else None


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
