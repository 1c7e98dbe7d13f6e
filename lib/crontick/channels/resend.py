"""The `email` channel: a Resend-style API (POST {base}/emails, bearer key, JSON body, Idempotency-Key header)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crontick.channels import wire
from crontick.channels.message import Delivered, Message, default_sender, require_recipient
from crontick.settings import Settings

# Resend keeps the Idempotency-Key 24 h: a retry after an ambiguous outcome cannot deliver twice.
IDEMPOTENT = True
ADDRESS: str | None = "email"  # a booking's email address


@dataclass(frozen=True)
class EmailChannel:
    """A Resend-style API: POST {base}/emails, bearer key, JSON body, Idempotency-Key header (kept 24 h by Resend)."""

    base_url: str
    api_key: str = field(repr=False)
    sender: str
    name: str = "email"

    async def send(self, message: Message, timeout_seconds: float) -> Delivered:
        require_recipient(message, "an email address")
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
        response = await wire.post(
            f"{self.base_url.rstrip('/')}/emails", timeout_seconds, "email", json=body, headers=headers
        )
        return Delivered(wire.json_field(response, "id"))


def build(name: str, settings: Settings) -> EmailChannel:
    return EmailChannel(settings.email_api_url, settings.email_api_key or "", default_sender(settings))
