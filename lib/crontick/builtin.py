"""The job types crontick ships: `webhook` (POST JSON to a URL) and `send_email`, `send_sms`, `send_whatsapp`."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from . import http
from .errors import ConfigError, PayloadError, PermanentError
from .handlers import Job, handler
from .settings import Settings

if TYPE_CHECKING:  # imported by each sender instead: loading the built-in types costs a cold start nothing
    from . import delivery

EMAIL_PAYLOAD = '{"to": "ada@example.com", "subject": "…", "text": "…"} (or "html"; optional "from", "idempotency_key")'
PHONE_PAYLOAD = '{"to": "+31612345678", "body": "…"} (optional "from")'


@functools.cache
def env_settings() -> Settings:
    """The channels' credentials, read once per process from the same variables the reminders use."""
    return Settings.from_env()


@handler("webhook")
async def webhook(payload: Any, job: Job) -> None:
    """POST payload["json"] to payload["url"]. 2xx succeeds; 408, 429, 5xx and network errors retry."""
    if not isinstance(payload, dict) or not isinstance(payload.get("url"), str) or "json" not in payload:
        raise PayloadError("webhook", '{"url": "https://…", "json": <any JSON>}', payload)
    url = payload["url"]
    if not url.startswith(("http://", "https://")):
        raise PayloadError("webhook", 'a "url" starting with http:// or https://', url)
    from . import delivery

    headers = {"Idempotency-Key": f"job:{job.id}"}
    what = f"webhook {delivery.public_url(url)}"
    # Job URLs may come from an app's users: by default they cannot reach internal addresses.
    from . import netguard  # imports httpx: only when a webhook job runs (cold start)

    client = netguard.client() if env_settings().webhook_deny_private else http.client()
    await delivery.post(url, http.DEFAULT_TIMEOUT, what, client=client, json=payload["json"], headers=headers)


@handler("send_email")
async def send_email(payload: Any, job: Job) -> None:
    """Send one email. An ambiguous outcome is retried: the Idempotency-Key (job:{id}) stops a second delivery."""
    if not isinstance(payload, dict) or not _text(payload, "to") or not _text(payload, "subject"):
        raise PayloadError("send_email", EMAIL_PAYLOAD, payload)
    if not (_text(payload, "text") or _text(payload, "html")):
        raise PayloadError("send_email", EMAIL_PAYLOAD, payload)
    from . import delivery

    message = delivery.Message(
        to=payload["to"],
        subject=payload["subject"],
        text=_text(payload, "text") or "",
        html=_text(payload, "html"),
        sender=_text(payload, "from"),
        idempotency_key=_text(payload, "idempotency_key") or f"job:{job.id}",
    )
    await _channel("email").send(message, env_settings().delivery_timeout_seconds)


@handler("send_sms")
async def send_sms(payload: Any, job: Job) -> None:
    """Send one SMS through Twilio; after an ambiguous outcome it fails rather than risk a second SMS."""
    await _send_phone("sms", payload, job)


@handler("send_whatsapp")
async def send_whatsapp(payload: Any, job: Job) -> None:
    """Send one WhatsApp message through Twilio; like send_sms, never resent after an ambiguous outcome."""
    await _send_phone("whatsapp", payload, job)


async def _send_phone(name: str, payload: Any, job: Job) -> None:
    if not isinstance(payload, dict) or not _text(payload, "to") or not _text(payload, "body"):
        raise PayloadError(f"send_{name}", PHONE_PAYLOAD, payload)
    from . import delivery

    message = delivery.Message(
        to=payload["to"],
        subject="",
        text=payload["body"],
        sender=_text(payload, "from"),
        idempotency_key=f"job:{job.id}",
    )
    try:
        await _channel(name).send(message, env_settings().delivery_timeout_seconds)
    except delivery.DeliveryUnknown as exc:
        raise PermanentError(
            f"{exc}; not retried because Twilio takes no idempotency key and a retry could send it twice "
            f"(check the Twilio console, then `crontick retry {job.id}` if it did not arrive)"
        ) from exc


def _channel(name: str) -> delivery.Channel:
    from . import delivery

    try:
        return delivery.channel(name, env_settings())
    except ConfigError as exc:
        raise PermanentError(f"send_{name}: {exc}") from exc


def _text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value.strip() else None
