"""CRONTICK_WAKER's value -> its provider, each module imported only when named (a tick that books nothing
imports none, and none imports boto3 or a Google library)."""

from __future__ import annotations

import importlib

from crontick.settings import Settings
from crontick.wakers.base import Provider

# CRONTICK_WAKER's values (crontick.settings.wakeups.WAKERS) and the module of each provider.
MODULES = {
    "qstash": "crontick.wakers.qstash",
    "eventbridge": "crontick.wakers.eventbridge",
    "cloudtasks": "crontick.wakers.cloudtasks",
    "vercel-queue": "crontick.wakers.vercel_queue",
}


def provider_for(settings: Settings) -> Provider | None:
    """The provider CRONTICK_WAKER names, built from the settings; None for `none`."""
    module = MODULES.get(settings.waker)
    if module is None:
        return None
    built: Provider = importlib.import_module(module).provider(settings)
    return built
