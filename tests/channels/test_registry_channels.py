"""Channels by name: each built from settings, a missing credential named, the idempotent ones known."""

from __future__ import annotations

import pytest

from crontick.channels import registry
from crontick.errors import ConfigError
from crontick.settings import REMINDER_CHANNELS, Settings


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "pigeon",
            "CRONTICK_REMINDER_CHANNEL: expected a channel among console, email, smtp, django, sms, whatsapp, webhook "
            "or one registered with @crontick.reminder_channel('pigeon') in a module named in CRONTICK_HANDLERS, "
            "got: 'pigeon'",
        ),
        (
            "django",
            "CRONTICK_REMINDER_CHANNEL: expected 'crontick.django' in INSTALLED_APPS for the django channel (it sends "
            "through Django's EMAIL_BACKEND), got: a process without it",
        ),
        (
            "smtp",
            "CRONTICK_SMTP_HOST: expected your SMTP server's host name such as smtp.example.com for the smtp channel, "
            "got: nothing",
        ),
        ("email", "RESEND_API_KEY: expected your email API key (re_…) for the email channel, got: nothing"),
        (
            "webhook",
            "CRONTICK_REMINDER_WEBHOOK_URL: expected an https:// URL that receives each reminder for the webhook channel, got: nothing",
        ),
    ],
)
def test_building_a_channel_without_its_settings_names_what_is_missing(name: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        registry.channel(name, Settings())
    assert str(info.value) == message


def test_every_channel_name_has_a_module_and_only_those_that_take_a_stable_key_are_idempotent() -> None:
    assert sorted([*registry.CHANNELS, registry.REGISTERED_BY_DJANGO]) == sorted(REMINDER_CHANNELS)
    # never sms or whatsapp (Twilio takes no key), nor smtp (a server may take a message and drop the connection)
    assert registry.IDEMPOTENT_CHANNELS == {"console", "email", "webhook"}


def test_a_channel_is_built_from_its_settings() -> None:
    settings = Settings(twilio_account_sid="AC1", twilio_auth_token="t", whatsapp_from="+14155238886")
    whatsapp = registry.channel("whatsapp", settings)
    assert (whatsapp.name, type(whatsapp).__module__) == ("whatsapp", "crontick.channels.twilio")
    assert registry.channel("console", Settings()).name == "console"
