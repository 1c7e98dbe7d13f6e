"""The job types crontick ships: `webhook` (POST JSON to a URL) and `send_email`, `send_sms`, `send_whatsapp`."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from crontick.errors import ConfigError, PayloadError, PermanentError
from crontick.http import client
from crontick.jobs.job import Job
from crontick.settings import Settings

if TYPE_CHECKING:  # imported by each sender instead: loading the built-in types costs a cold start nothing
    from crontick.channels.message import Channel

EMAIL_PAYLOAD = '{"to": "ada@example.com", "subject": "…", "text": "…"} (or "html"; optional "from", "idempotency_key")'
PHONE_PAYLOAD = '{"to": "+31612345678", "body": "…"} (optional "from")'
# The step every built-in sender's key is derived from: job.step_key(SEND_STEP), the same on every attempt
# of the job and unique per job and database (docs/jobs.md "Built-in job types" says which header carries it).
SEND_STEP = "send"


# The Settings of the batch being run, set by crontick.jobs.runner for each batch: the built-in types take
# their credentials, timeouts and webhook guard from the Settings the tick was given (create_app(Settings(...))
# or the environment, read once), never from a second read of the environment. Outside a batch: the
# defaults (the webhook guard on, no provider credentials), so a direct call fails closed.
DEFAULT_SETTINGS = Settings()
SETTINGS: ContextVar[Settings] = ContextVar("crontick_batch_settings", default=DEFAULT_SETTINGS)


async def webhook(payload: Any, job: Job) -> None:
    """POST payload["json"] to payload["url"]. 2xx succeeds; 408, 429, 5xx and network errors retry."""
    if not isinstance(payload, dict) or not isinstance(payload.get("url"), str) or "json" not in payload:
        raise PayloadError("webhook", '{"url": "https://…", "json": <any JSON>}', payload)
    url = payload["url"]
    if not url.startswith(("http://", "https://")):
        raise PayloadError("webhook", 'a "url" starting with http:// or https://', url)
    from crontick.channels import wire

    # The same key on every attempt, under both names receivers dedupe on: Standard Webhooks' webhook-id
    # (the message id its receivers keep) and Idempotency-Key (the IETF draft's header).
    key = job.step_key(SEND_STEP)
    headers = {"Idempotency-Key": key, "webhook-id": key}
    what = f"webhook {wire.public_url(url)}"
    # Job URLs may come from an app's users: by default they cannot reach internal addresses.
    from crontick.http import netguard  # imports httpx: only when a webhook job runs (cold start)

    outbound = netguard.client() if SETTINGS.get().webhook_deny_private else client.client()
    await wire.post(url, client.DEFAULT_TIMEOUT, what, client=outbound, json=payload["json"], headers=headers)


async def send_email(payload: Any, job: Job) -> None:
    """Send one email. An ambiguous outcome is retried: the Idempotency-Key (job.step_key("send")) stops a second
    delivery."""
    if not isinstance(payload, dict) or not _text(payload, "to") or not _text(payload, "subject"):
        raise PayloadError("send_email", EMAIL_PAYLOAD, payload)
    if not (_text(payload, "text") or _text(payload, "html")):
        raise PayloadError("send_email", EMAIL_PAYLOAD, payload)
    from crontick.channels.message import Message

    message = Message(
        to=payload["to"],
        subject=payload["subject"],
        text=_text(payload, "text") or "",
        html=_text(payload, "html"),
        sender=_text(payload, "from"),
        idempotency_key=_text(payload, "idempotency_key") or job.step_key(SEND_STEP),
    )
    await _channel("email").send(message, SETTINGS.get().delivery_timeout_seconds)


async def send_sms(payload: Any, job: Job) -> None:
    """Send one SMS through Twilio; after an ambiguous outcome it fails rather than risk a second SMS."""
    await _send_phone("sms", payload, job)


async def send_whatsapp(payload: Any, job: Job) -> None:
    """Send one WhatsApp message through Twilio; like send_sms, never resent after an ambiguous outcome."""
    await _send_phone("whatsapp", payload, job)


async def _send_phone(name: str, payload: Any, job: Job) -> None:
    if not isinstance(payload, dict) or not _text(payload, "to") or not _text(payload, "body"):
        raise PayloadError(f"send_{name}", PHONE_PAYLOAD, payload)
    from crontick.channels import wire
    from crontick.channels.message import Message

    message = Message(
        to=payload["to"],
        subject="",
        text=payload["body"],
        sender=_text(payload, "from"),
        idempotency_key=job.step_key(SEND_STEP),  # not sent: Twilio's Messages API takes no idempotency key
    )
    try:
        await _channel(name).send(message, SETTINGS.get().delivery_timeout_seconds)
    except wire.DeliveryUnknown as exc:
        raise PermanentError(
            f"{exc}; not retried because Twilio takes no idempotency key and a retry could send it twice "
            f"(check the Twilio console, then `crontick retry {job.id}` if it did not arrive)"
        ) from exc


def _channel(name: str) -> Channel:
    from crontick.channels import registry

    try:
        return registry.channel(name, SETTINGS.get())
    except ConfigError as exc:
        raise PermanentError(f"send_{name}: {exc}") from exc


def _text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value.strip() else None


# Registered by crontick.jobs.registry on its first use, before the app's own handlers.
TYPES = {"webhook": webhook, "send_email": send_email, "send_sms": send_sms, "send_whatsapp": send_whatsapp}
