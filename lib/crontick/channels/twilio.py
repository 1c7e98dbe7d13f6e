"""The `sms` and `whatsapp` channels: the Twilio Messages API (form-encoded To/From/Body with basic auth)."""

from __future__ import annotations

from dataclasses import dataclass, field

from crontick.channels import wire
from crontick.channels.message import Delivered, Message, require_recipient
from crontick.settings import Settings

TWILIO_API_VERSION = "2010-04-01"
# Twilio takes no idempotency key, so an ambiguous SMS or WhatsApp message is never resent.
IDEMPOTENT = False
ADDRESS: str | None = "phone"  # a booking's phone number


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
        require_recipient(message, "a phone number")
        prefix = "whatsapp:" if self.name == "whatsapp" else ""
        form = {
            "To": prefix + message.to.removeprefix(prefix),
            "From": prefix + (message.sender or self.sender).removeprefix(prefix),
            "Body": message.text,
        }
        url = f"{self.base_url.rstrip('/')}/{TWILIO_API_VERSION}/Accounts/{self.account_sid}/Messages.json"
        import httpx

        auth = httpx.BasicAuth(self.account_sid, self.auth_token)
        response = await wire.post(url, timeout_seconds, self.name, data=form, auth=auth)
        return Delivered(wire.json_field(response, "sid"))


def build(name: str, settings: Settings) -> TwilioChannel:
    twilio_from = settings.sms_from if name == "sms" else settings.whatsapp_from
    return TwilioChannel(
        settings.twilio_api_url,
        settings.twilio_account_sid or "",
        settings.twilio_auth_token or "",
        twilio_from or "",
        name=name,
    )
