"""The `console` channel: each message printed to stdout as a MIME message and a rule, like Django's console email backend."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from crontick.channels.message import Delivered, Message, default_sender
from crontick.settings import Settings

CONSOLE_RULE = "-" * 79  # what Django's console email backend prints between messages
# A repeat on a developer's terminal harms no one, so an ambiguous outcome may be retried.
IDEMPOTENT = True
ADDRESS: str | None = None  # any booking: printed with its email, phone or name


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
        if message.html is not None:
            mime.add_alternative(message.html, subtype="html", cte="8bit")
        sys.stdout.write(f"{mime.as_bytes().decode()}\n{CONSOLE_RULE}\n")
        sys.stdout.flush()
        return Delivered(None)


def build(name: str, settings: Settings) -> ConsoleChannel:
    return ConsoleChannel(default_sender(settings))
