"""The `smtp` channel: the standard library's SMTP client in a worker thread, STARTTLS by default, a login when a
username is set, one message with a text part and, when an HTML template is set, an HTML part.

How a send ends (the other channels' classes, crontick.channels.wire):
- no connection, or the server's 4xx before DATA was sent (or a drop before it): DeliveryFailed, retried;
- a 5xx reply, a refused login, no STARTTLS offered: PermanentError;
- a 4xx reply to the message itself: DeliveryFailed (the server said it did not take it);
- a drop or a timeout after the message was sent, before the server's answer: DeliveryUnknown. SMTP has no
  idempotency key (the Message-ID, derived from the reminder's key, lets a reader's client de-duplicate, not the
  server), so such a reminder is never resent: it ends `unknown`.
"""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate, parseaddr

from crontick.channels import wire
from crontick.channels.message import Delivered, Message, default_sender, message_id, require_recipient
from crontick.errors import PermanentError
from crontick.settings import Settings

IDEMPOTENT = False  # a server may take the message and drop the connection before it answers
ADDRESS: str | None = "email"


@dataclass(frozen=True)
class SmtpChannel:
    """One SMTP submission per message: connect, EHLO, STARTTLS, login, MAIL, RCPT, DATA, QUIT."""

    host: str
    port: int
    sender: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    starttls: bool = True
    name: str = "smtp"

    async def send(self, message: Message, timeout_seconds: float) -> Delivered:
        require_recipient(message, "an email address")
        mime = mime_message(message, message.sender or self.sender)
        await asyncio.to_thread(self._submit, mime, parseaddr(message.to)[1] or message.to, timeout_seconds)
        return Delivered(None)

    def _submit(self, mime: EmailMessage, to: str, timeout: float) -> None:
        where = f"smtp {self.host}:{self.port}"
        data_sent = False
        try:
            with smtplib.SMTP(self.host, self.port, timeout=timeout) as client:
                self._open(client, where)
                _expect(client.mail(parseaddr(str(mime["From"]))[1]), (250,), where, "MAIL FROM")
                _expect(client.rcpt(to), (250, 251), where, f"RCPT TO <{to}>")
                data_sent = True
                _expect(client.data(mime.as_bytes(policy=SMTP)), (250,), where, "the message")  # CRLF lines
        except (PermanentError, wire.DeliveryFailed):
            raise
        except smtplib.SMTPResponseException as exc:  # a reply smtplib checks itself (EHLO, STARTTLS, DATA's 354)
            raise _by_code(exc.smtp_code, exc.smtp_error, where, "the server") from exc
        except (smtplib.SMTPException, OSError) as exc:
            text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if data_sent:
                raise wire.DeliveryUnknown(
                    f"{where}: expected the server's answer to the message, got: {text} after it was sent "
                    "(it may have been delivered; not resent)"
                ) from exc
            raise wire.DeliveryFailed(
                f"{where}: expected a session with the server, got: {text}; nothing was sent"
            ) from exc

    def _open(self, client: smtplib.SMTP, where: str) -> None:
        client.ehlo()
        if self.starttls:
            if not client.has_extn("starttls"):
                raise PermanentError(
                    f"{where}: expected STARTTLS (set CRONTICK_SMTP_STARTTLS=false for a local relay), got: a server "
                    "that does not offer it"
                )
            client.starttls(context=ssl.create_default_context())
            client.ehlo()
        if self.username:
            try:
                client.login(self.username, self.password or "")
            except smtplib.SMTPAuthenticationError as exc:
                raise PermanentError(
                    f"{where}: expected CRONTICK_SMTP_USERNAME and _PASSWORD to log in, got: "
                    f"{exc.smtp_code} {_text(exc.smtp_error)}"
                ) from exc


def _expect(reply: tuple[int, bytes], codes: tuple[int, ...], where: str, what: str) -> None:
    code, text = reply
    if code not in codes:
        raise _by_code(code, text, where, what)


def _by_code(code: int, text: bytes | str, where: str, what: str) -> Exception:
    """4xx: DeliveryFailed (try again later); 5xx and anything else: PermanentError."""
    message = f"{where} answered {code} {_text(text)} to {what}"
    if 400 <= code < 500:
        return wire.DeliveryFailed(message)
    return PermanentError(message)


def _text(text: bytes | str) -> str:
    return (text.decode("utf-8", "replace") if isinstance(text, bytes) else text)[: wire.BODY_EXCERPT_BYTES]


def mime_message(message: Message, sender: str) -> EmailMessage:
    """The message as MIME: From, To, Subject, Date, a Message-ID and an Idempotency-Key from the reminder's
    stable key; a text part and, when there is HTML, an HTML alternative."""
    mime = EmailMessage()
    mime["Subject"] = message.subject
    mime["From"] = sender
    mime["To"] = message.to
    mime["Date"] = formatdate(localtime=False)
    mime["Message-ID"] = message_id(message.idempotency_key, sender)
    mime["Idempotency-Key"] = message.idempotency_key
    # Quoted-printable: 7-bit clean whatever the text, so no server needs 8BITMIME.
    mime.set_content(message.text, cte="quoted-printable")
    if message.html is not None:
        mime.add_alternative(message.html, subtype="html", cte="quoted-printable")
    return mime


def build(name: str, settings: Settings) -> SmtpChannel:
    return SmtpChannel(
        settings.smtp_host or "",
        settings.smtp_port,
        default_sender(settings),
        settings.smtp_username,
        settings.smtp_password,
        settings.smtp_starttls,
    )
