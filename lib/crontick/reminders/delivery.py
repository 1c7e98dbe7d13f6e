"""Delivery channels (email, SMS, WhatsApp, Standard Webhooks, console), each classifying how a send ended."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from crontick.errors import ConfigError, CrontickError, PermanentError, RetryableError
from crontick.http import client as http
from crontick.settings import REMINDER_CHANNELS, Settings, require_channel, webhook_signing_key

if TYPE_CHECKING:  # imported where a message is sent: a tick that sends nothing never pays for httpx
    import httpx

RETRYABLE_STATUSES = frozenset({408, 429})
BODY_EXCERPT_BYTES = 500
# The most of a provider's answer read, on the wire and decoded (crontick.http.client reads it).
RESPONSE_MAX_BYTES = http.RESPONSE_MAX_BYTES
CONSOLE_RULE = "-" * 79  # what Django's console email backend prints between messages
TWILIO_API_VERSION = "2010-04-01"
# Channels where a retry after an ambiguous outcome cannot deliver twice: the provider honours the
# message's stable key (Resend's Idempotency-Key, Standard Webhooks' webhook-id), or, for the
# console, a repeat harms no one. Twilio takes no key, so an ambiguous SMS is never resent.
IDEMPOTENT_CHANNELS = frozenset({"email", "webhook", "console"})


class DeliveryFailed(RetryableError):
    """A definite failure worth retrying: the provider answered 408, 429 or 5xx, or no connection was made.

    On 429 and 503 it carries the provider's Retry-After, which the retry then waits out.
    """


class DeliveryUnknown(CrontickError):
    """An ambiguous outcome: the request may have reached the provider (a timeout or a dropped connection after sending)."""


@dataclass(frozen=True)
class Message:
    """One message, whatever the channel: each channel reads the fields it needs."""

    to: str  # an email address, a phone number in E.164 form, or a display name for the console
    subject: str
    text: str
    idempotency_key: str
    html: str | None = None
    sender: str | None = None  # overrides the channel's configured sender (send_email's "from")
    data: Mapping[str, Any] = field(default_factory=dict)  # the JSON body of a webhook


@dataclass(frozen=True)
class Delivered:
    provider_message_id: str | None


class Channel(Protocol):
    @property
    def name(self) -> str: ...

    async def send(self, message: Message, timeout_seconds: float) -> Delivered: ...


@dataclass(frozen=True)
class EmailChannel:
    """A Resend-style API: POST {base}/emails, bearer key, JSON body, Idempotency-Key header (kept 24 h by Resend)."""

    base_url: str
    api_key: str = field(repr=False)
    sender: str
    name: str = "email"

    async def send(self, message: Message, timeout_seconds: float) -> Delivered:
        _require_recipient(message, "an email address")
        body: dict[str, Any] = {
            "from": message.sender or self.sender,
            "to": [message.to],
            "subject": message.subject,
        }
        if message.text:
            body["text"] = message.text
        if message.html is not None:
            body["html"] = message.html
        headers = {"Authorization": f"Bearer {self.api_key}", "Idempotency-Key": message.idempotency_key}
        response = await post(
            f"{self.base_url.rstrip('/')}/emails", timeout_seconds, "email", json=body, headers=headers
        )
        return Delivered(_json_field(response, "id"))


@dataclass(frozen=True)
class TwilioChannel:
    """The Twilio Messages API: form-encoded To/From/Body with basic auth; WhatsApp numbers carry `whatsapp:`.

    Twilio takes no idempotency key, so after an ambiguous outcome the message is never resent.
    """

    base_url: str
    account_sid: str
    auth_token: str = field(repr=False)
    sender: str
    name: str = "sms"

    async def send(self, message: Message, timeout_seconds: float) -> Delivered:
        _require_recipient(message, "a phone number")
        prefix = "whatsapp:" if self.name == "whatsapp" else ""
        form = {
            "To": prefix + message.to.removeprefix(prefix),
            "From": prefix + (message.sender or self.sender).removeprefix(prefix),
            "Body": message.text,
        }
        url = f"{self.base_url.rstrip('/')}/{TWILIO_API_VERSION}/Accounts/{self.account_sid}/Messages.json"
        import httpx

        auth = httpx.BasicAuth(self.account_sid, self.auth_token)
        response = await post(url, timeout_seconds, self.name, data=form, auth=auth)
        return Delivered(_json_field(response, "sid"))


@dataclass(frozen=True)
class WebhookChannel:
    """POST JSON signed per Standard Webhooks; webhook-id is the stable key receivers de-duplicate on."""

    url: str
    secret: str = field(repr=False)
    name: str = "webhook"

    async def send(self, message: Message, timeout_seconds: float) -> Delivered:
        body = json.dumps(message.data, separators=(",", ":"), ensure_ascii=False).encode()
        # The signature proves freshness to the receiver, so it carries the wall-clock send time.
        headers = {
            "Content-Type": "application/json",
            **sign(self.secret, message.idempotency_key, int(time.time()), body),
        }
        await post(self.url, timeout_seconds, f"webhook {public_url(self.url)}", content=body, headers=headers)
        return Delivered(None)


@dataclass(frozen=True)
class ConsoleChannel:
    """Prints each message to stdout as a MIME message and a rule, like Django's console email backend."""

    sender: str
    name: str = "console"

    async def send(self, message: Message, timeout_seconds: float) -> Delivered:
        # Imported here: the email package costs cold-start time on every host, and only the
        # console channel (a developer's terminal) uses it.
        import email.policy
        from email.message import EmailMessage
        from email.utils import formatdate

        policy = email.policy.default.clone(utf8=True)  # UTF-8 headers and body, "\n" lines: readable as printed
        mime = EmailMessage(policy=policy)
        mime["Subject"] = message.subject
        mime["From"] = message.sender or self.sender
        mime["To"] = message.to
        mime["Date"] = formatdate(localtime=True)
        mime["Idempotency-Key"] = message.idempotency_key
        mime.set_content(message.text, cte="8bit")
        sys.stdout.write(f"{mime.as_bytes().decode()}\n{CONSOLE_RULE}\n")
        sys.stdout.flush()
        return Delivered(None)


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Standard Webhooks headers: v1 = base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}"))."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(webhook_signing_key(secret), signed, hashlib.sha256).digest()
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": "v1," + base64.b64encode(digest).decode(),
    }


def channel(name: str, settings: Settings) -> Channel:
    """The channel `name` built from settings; ConfigError names a missing credential."""
    if name not in REMINDER_CHANNELS:
        raise ConfigError(f"expected a channel among {', '.join(REMINDER_CHANNELS)}, got: {name!r}")
    require_channel(settings, name)
    sender = settings.email_from or "crontick <reminders@localhost>"
    if name == "email":
        return EmailChannel(settings.email_api_url, settings.email_api_key or "", sender)
    if name in ("sms", "whatsapp"):
        twilio_from = settings.sms_from if name == "sms" else settings.whatsapp_from
        return TwilioChannel(
            settings.twilio_api_url,
            settings.twilio_account_sid or "",
            settings.twilio_auth_token or "",
            twilio_from or "",
            name=name,
        )
    if name == "webhook":
        return WebhookChannel(settings.reminder_webhook_url or "", settings.reminder_webhook_secret or "")
    return ConsoleChannel(sender)


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


def _require_recipient(message: Message, what: str) -> None:
    if not message.to.strip():
        raise PermanentError(f"expected {what} to send to, got: nothing")


def _json_field(response: httpx.Response, name: str) -> str | None:
    """The provider's message id, if its 2xx body has one; a body we cannot parse is no failure."""
    try:
        value = response.json().get(name)
    except (ValueError, AttributeError, RecursionError):  # RecursionError: JSON nested deeper than Python parses
        return None
    return str(value) if value is not None else None


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
