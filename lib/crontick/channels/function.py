"""Channels an app registers: `@crontick.reminder_channel("name")` on a function (sync or async) that sends one
reminder, and `CRONTICK_REMINDER_CHANNEL=name` sends through it. crontick.django registers its `django` channel here.

The function gets a ReminderMessage (to, subject, text, html, idempotency_key, and in `data` the reminder as the
webhook channel posts it) and returns nothing or the provider's message id. Its exceptions are read as a
handler's: PermanentError ends the reminder `failed` at once; any other exception is a failure retried with
backoff (RetryableError's retry_after_seconds honoured). A function that may have sent before it raised should
raise crontick.channels.wire.DeliveryUnknown: the reminder is then resent only when the channel is declared
idempotent (the default: the function de-duplicates on message.idempotency_key), else left `unknown`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from crontick.channels import wire
from crontick.channels.message import Channel, Delivered, Message
from crontick.errors import ConfigError, PermanentError, RetryableError
from crontick.settings import REMINDER_CHANNELS, Settings
from crontick.settings.variables import CHANNEL_NAME
from crontick.text import describe

ReminderMessage = Message  # what a registered function receives, as crontick exports it
ADDRESSES = ("email", "phone", None)
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Registered:
    """A registered channel: how to build it for a process's settings, and what the claim and retries need to know."""

    build: Callable[[str, Settings], Channel]
    idempotent: bool
    address: str | None  # 'email' or 'phone': a booking without one is sent over the next channel of the list


_registered: dict[str, Registered] = {}


def register(name: str, found: Registered, *, builtin: bool = False) -> None:
    """Add (or replace) the channel `name`; `builtin` lets crontick.django register its `django` channel."""
    if not CHANNEL_NAME.fullmatch(name) or (name in REMINDER_CHANNELS and not builtin):
        raise ConfigError(
            f"reminder_channel: expected a name of a-z, 0-9, _ and - (up to 40, starting with a letter) other than "
            f"{', '.join(REMINDER_CHANNELS)}, got: {name!r}"
        )
    if found.address not in ADDRESSES:
        raise ConfigError(f"reminder_channel({name!r}): expected to='email', 'phone' or None, got: {found.address!r}")
    _registered[name] = found


def registered(name: str) -> Registered | None:
    return _registered.get(name)


def idempotent_names() -> frozenset[str]:
    return frozenset(n for n, r in _registered.items() if r.idempotent)


def addressed_by(contact: str) -> set[str]:
    return {n for n, r in _registered.items() if r.address == contact}


def reminder_channel(name: str, *, to: str | None = "email", idempotent: bool = True) -> Callable[[F], F]:
    """Register the decorated function as the reminder channel `name` (call it at import time of a module named in
    CRONTICK_HANDLERS). `to` is the contact it needs ('email', 'phone', or None for any booking); `idempotent`
    says a resend after an ambiguous outcome cannot deliver twice (the function honours the idempotency key)."""

    def decorate(fn: F) -> F:
        register(name, Registered(functools.partial(_build, fn), idempotent, to))
        return fn

    return decorate


def _build(fn: Callable[..., Any], name: str, settings: Settings) -> Channel:
    return FunctionChannel(name, fn)


@dataclass(frozen=True)
class FunctionChannel:
    """Sends through the app's function: an async one awaited, a sync one in a worker thread."""

    name: str
    fn: Callable[..., Any]

    async def send(self, message: Message, timeout_seconds: float) -> Delivered:
        try:
            if inspect.iscoroutinefunction(self.fn):
                result = await self.fn(message)
            else:
                result = await asyncio.to_thread(self.fn, message)
                if inspect.isawaitable(result):  # a callable object whose __call__ is async, a functools.partial
                    result = await result
        except (PermanentError, wire.DeliveryFailed, wire.DeliveryUnknown):
            raise
        except RetryableError as exc:
            raise wire.DeliveryFailed(f"{self.name}: {exc}", retry_after_seconds=exc.retry_after_seconds) from exc
        except Exception as exc:  # like a handler's: any other exception is retried
            raise wire.DeliveryFailed(f"{self.name}: {describe(exc)}") from exc
        return Delivered(None if result is None else str(result))
