"""The `webhook` channel: POST JSON signed per Standard Webhooks (also how alerts are signed)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field

from crontick.channels import wire
from crontick.channels.message import Delivered, Message
from crontick.settings import Settings, webhook_signing_key

# webhook-id is the message's stable key, which Standard Webhooks receivers de-duplicate on.
IDEMPOTENT = True
ADDRESS: str | None = None  # any booking: the receiver gets its contacts


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
        await wire.post(
            self.url, timeout_seconds, f"webhook {wire.public_url(self.url)}", content=body, headers=headers
        )
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


def build(name: str, settings: Settings) -> WebhookChannel:
    return WebhookChannel(settings.reminder_webhook_url or "", settings.reminder_webhook_secret or "")
