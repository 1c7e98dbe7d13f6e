"""Every channel by name: a new channel is one module (its `build` and `IDEMPOTENT`) and one line in CHANNELS.

The names and the settings each needs are declared in crontick.settings (REMINDER_CHANNELS, the rows' needed_by).
"""

from __future__ import annotations

from typing import Protocol

from crontick.channels import console, resend, twilio, webhook
from crontick.channels.message import Channel
from crontick.errors import ConfigError
from crontick.settings import REMINDER_CHANNELS, Settings, require_channel


class ChannelModule(Protocol):
    """What a channel's module declares: whether a retry after an ambiguous outcome is safe, and its builder."""

    IDEMPOTENT: bool

    def build(self, name: str, settings: Settings) -> Channel: ...


CHANNELS: dict[str, ChannelModule] = {
    "console": console,
    "email": resend,
    "sms": twilio,
    "whatsapp": twilio,
    "webhook": webhook,
}

# Channels where a retry after an ambiguous outcome cannot deliver twice: the provider honours the
# message's stable key (Resend's Idempotency-Key, Standard Webhooks' webhook-id), or, for the
# console, a repeat harms no one. Twilio takes no key, so an ambiguous SMS is never resent.
IDEMPOTENT_CHANNELS = frozenset(name for name, module in CHANNELS.items() if module.IDEMPOTENT)


def channel(name: str, settings: Settings) -> Channel:
    """The channel `name` built from settings; ConfigError names a missing credential."""
    if name not in REMINDER_CHANNELS:
        raise ConfigError(f"expected a channel among {', '.join(REMINDER_CHANNELS)}, got: {name!r}")
    require_channel(settings, name)
    return CHANNELS[name].build(name, settings)
