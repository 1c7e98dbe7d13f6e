"""Every channel by name: a new channel is one module (its `build`, `IDEMPOTENT` and `ADDRESS`) and one line in
CHANNELS; a channel an app registers (crontick.channels.function, and the `django` channel crontick.django
registers) is found by its name there.

The names and the settings each needs are declared in crontick.settings (REMINDER_CHANNELS, the rows' needed_by).
"""

from __future__ import annotations

from typing import Protocol

from crontick.channels import console, function, resend, smtp, twilio, webhook
from crontick.channels.message import Channel
from crontick.errors import ConfigError
from crontick.settings import REMINDER_CHANNELS, Settings, require_channel


class ChannelModule(Protocol):
    """What a channel's module declares: whether a retry after an ambiguous outcome is safe, which of a booking's
    contacts it sends to (`email`, `phone`, or None: any booking), and its builder."""

    IDEMPOTENT: bool
    ADDRESS: str | None

    def build(self, name: str, settings: Settings) -> Channel: ...


CHANNELS: dict[str, ChannelModule] = {
    "console": console,
    "email": resend,
    "smtp": smtp,
    "sms": twilio,
    "whatsapp": twilio,
    "webhook": webhook,
}
# Registered by crontick.django when it is an installed app: Django is imported only there.
REGISTERED_BY_DJANGO = "django"

# Channels where a retry after an ambiguous outcome cannot deliver twice: the provider honours the
# message's stable key (Resend's Idempotency-Key, Standard Webhooks' webhook-id), or, for the
# console, a repeat harms no one. Twilio takes no key, so an ambiguous SMS is never resent, nor is an
# e-mail over SMTP (a server may take the message and drop the connection before it answers).
IDEMPOTENT_CHANNELS = frozenset(name for name, module in CHANNELS.items() if module.IDEMPOTENT)


def idempotent_channels() -> frozenset[str]:
    """IDEMPOTENT_CHANNELS and the registered channels declared idempotent."""
    return IDEMPOTENT_CHANNELS | function.idempotent_names()


def addressed_by(contact: str) -> list[str]:
    """The channels that send to a booking's `contact` ('email' or 'phone'), built-in and registered."""
    return sorted({n for n, m in CHANNELS.items() if m.ADDRESS == contact} | function.addressed_by(contact))


def address(name: str) -> str | None:
    """The contact the channel `name` sends to: 'email', 'phone', or None (any booking; its email, phone or name)."""
    if name in CHANNELS:
        return CHANNELS[name].ADDRESS
    found = function.registered(name)
    return None if found is None else found.address


def channel(name: str, settings: Settings) -> Channel:
    """The channel `name` built from settings; ConfigError names a missing credential or an unknown name."""
    if name in CHANNELS:
        require_channel(settings, name)
        return CHANNELS[name].build(name, settings)
    found = function.registered(name)
    if found is None:
        raise ConfigError(unknown(name))
    return found.build(name, settings)


def unknown(name: str) -> str:
    if name == REGISTERED_BY_DJANGO:
        return (
            "CRONTICK_REMINDER_CHANNEL: expected 'crontick.django' in INSTALLED_APPS for the django channel "
            "(it sends through Django's EMAIL_BACKEND), got: a process without it"
        )
    return (
        f"CRONTICK_REMINDER_CHANNEL: expected a channel among {', '.join(REMINDER_CHANNELS)} or one registered with "
        f"@crontick.reminder_channel({name!r}) in a module named in CRONTICK_HANDLERS, got: {name!r}"
    )


def check_names(settings: Settings) -> None:
    """ConfigError at start-up (once CRONTICK_HANDLERS are imported) for a channel no one registered."""
    for name in settings.reminder_channels:
        if name not in CHANNELS and function.registered(name) is None:
            raise ConfigError(unknown(name))
