"""What every channel sends and answers: one Message in, Delivered out (or an error saying how the send ended)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from crontick.errors import PermanentError
from crontick.settings import Settings


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


def default_sender(settings: Settings) -> str:
    """The sender of email and console messages: CRONTICK_EMAIL_FROM, or a placeholder for the console."""
    return settings.email_from or "crontick <reminders@localhost>"


def require_recipient(message: Message, what: str) -> None:
    if not message.to.strip():
        raise PermanentError(f"expected {what} to send to, got: nothing")


def message_id(idempotency_key: str, sender: str) -> str:
    """A Message-ID derived from the reminder's stable key: every retry of one reminder carries the same one, so a
    mail server or client that de-duplicates on it shows the message once. The domain is the sender's."""
    import hashlib
    from email.utils import parseaddr

    domain = parseaddr(sender)[1].rpartition("@")[2] or "crontick.invalid"
    return f"<crontick.{hashlib.sha256(idempotency_key.encode()).hexdigest()[:40]}@{domain}>"
