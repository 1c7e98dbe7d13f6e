"""The `django` reminder channel: each reminder sent through the project's own EMAIL_BACKEND, from DEFAULT_FROM_EMAIL,
as an EmailMultiAlternatives (the text, and the HTML part when an HTML template is set).

Registered by crontick.django's AppConfig.ready, so `CRONTICK_REMINDER_CHANNEL=django` works in any process that
has set Django up. Django's mail API is synchronous: it runs in a worker thread. Its SMTP backend raises the
standard library's errors, classified as the `smtp` channel classifies them (a 4xx retried, a 5xx permanent, no
connection retried); anything else a backend raises is ambiguous, and since a backend takes no idempotency key
such a reminder is never resent (it ends `unknown`).
"""

from __future__ import annotations

import asyncio
import smtplib
from dataclasses import dataclass

from crontick.channels import function, wire
from crontick.channels.message import Channel, Delivered, Message, message_id, require_recipient
from crontick.errors import PermanentError
from crontick.settings import Settings

NAME = "django"


@dataclass(frozen=True)
class DjangoMailChannel:
    name: str = NAME

    async def send(self, message: Message, timeout_seconds: float) -> Delivered:
        require_recipient(message, "an email address")
        await asyncio.to_thread(_send, message)
        return Delivered(None)


def _send(message: Message) -> None:
    from django.conf import settings
    from django.core.mail import EmailMultiAlternatives

    sender = message.sender or settings.DEFAULT_FROM_EMAIL
    mail = EmailMultiAlternatives(
        subject=message.subject,
        body=message.text,
        from_email=sender,
        to=[message.to],
        headers={"Message-ID": message_id(message.idempotency_key, sender), "Idempotency-Key": message.idempotency_key},
    )
    if message.html is not None:
        mail.attach_alternative(message.html, "text/html")
    try:
        mail.send(fail_silently=False)
    except smtplib.SMTPResponseException as exc:
        text = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        detail = f"django EMAIL_BACKEND: the server answered {exc.smtp_code} {text[: wire.BODY_EXCERPT_BYTES]}"
        if 400 <= exc.smtp_code < 500:
            raise wire.DeliveryFailed(detail) from exc
        raise PermanentError(detail) from exc
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        detail = f"django EMAIL_BACKEND: the server refused the recipient ({', '.join(map(str, codes))})"
        if codes and all(400 <= code < 500 for code in codes):
            raise wire.DeliveryFailed(detail) from exc
        raise PermanentError(detail) from exc
    except (ConnectionError, smtplib.SMTPConnectError) as exc:
        raise wire.DeliveryFailed(f"django EMAIL_BACKEND: expected a connection, got: {exc}; nothing was sent") from exc


def _build(name: str, settings: Settings) -> Channel:
    return DjangoMailChannel()


def register() -> None:
    """Make `django` a reminder channel of this process (AppConfig.ready)."""
    function.register(NAME, function.Registered(_build, idempotent=False, address="email"), builtin=True)
