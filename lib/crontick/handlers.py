"""The handler registry: job type -> function, filled by @crontick.handler and CRONTICK_HANDLERS."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from .backoff import DEFAULT_POLICY, RetryPolicy
from .errors import ConfigError


class Job(NamedTuple):
    """What a handler is told about the job it runs.

    A NamedTuple (immutable, read by attribute), like the tick's other per-job values: a tick
    makes one per job, and a frozen dataclass took four times as long to build.
    """

    id: int
    type: str
    payload: Any
    attempt: int
    max_attempts: int
    created_at: datetime
    # Set on jobs a schedule enqueued: the slot (a UTC instant) it runs for, and the schedule's name.
    scheduled_for: datetime | None = None
    schedule: str | None = None
    snoozes: int = 0  # times this job has snoozed (raise crontick.Snooze) so far


HandlerFunc = Callable[[Any, Job], Awaitable[None] | None]


@dataclass(frozen=True)
class Handler:
    type: str
    func: HandlerFunc
    is_async: bool
    retry: RetryPolicy
    timeout_seconds: float | None


_registry: dict[str, Handler] = {}
_loaded_modules: list[str] = []
_builtins_loaded = False


def _load_builtins() -> None:
    """Register crontick's own job types (webhook, send_email, …) on the registry's first use, not at
    import: a cold start that serves an idle tick never loads them. Before the app's own handlers,
    so a type declared twice is refused in the app's module, as it always was."""
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        from . import builtin  # noqa: F401


def handler(
    type: str, *, retry: RetryPolicy | None = None, timeout_seconds: float | None = None
) -> Callable[[HandlerFunc], HandlerFunc]:
    """Register `func(payload, job)` (def or async def) as the handler for jobs of `type`.

    `retry` overrides the default 1/5/30-minute schedule for this type; `timeout_seconds`
    caps one attempt (it is always also capped by what is left of the tick's budget).
    """
    _load_builtins()
    if not type or not isinstance(type, str):
        raise ConfigError(f"@crontick.handler: expected a non-empty job type string, got: {type!r}")

    def register(func: HandlerFunc) -> HandlerFunc:
        existing = _registry.get(type)
        if existing is not None and existing.func is not func and _qualname(existing.func) != _qualname(func):
            raise ConfigError(
                f"@crontick.handler({type!r}): expected one handler per type, got a second one: "
                f"{_qualname(func)} (the first is {_qualname(existing.func)})"
            )
        _registry[type] = Handler(
            type=type,
            func=func,
            is_async=inspect.iscoroutinefunction(func),
            retry=retry or DEFAULT_POLICY,
            timeout_seconds=timeout_seconds,
        )
        return func

    return register


def get(type: str) -> Handler | None:
    _load_builtins()
    return _registry.get(type)


def registered_types() -> list[str]:
    _load_builtins()
    return sorted(_registry)


def loaded_modules() -> list[str]:
    return list(_loaded_modules)


def load_modules(modules: Iterable[str]) -> None:
    """Import the modules named in CRONTICK_HANDLERS so their @handler decorators run."""
    for name in modules:
        if name in _loaded_modules:
            continue
        try:
            importlib.import_module(name)
        except ConfigError:
            raise  # already one line naming what is wrong (a bad crontick.schedule, say)
        except Exception as exc:  # not found, or the module's own code failed (a missing env var, a typo)
            raise ConfigError(
                f"CRONTICK_HANDLERS: expected importable module names, got {name!r}, which fails to import: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        _loaded_modules.append(name)


def _qualname(func: Callable[..., Any]) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"
