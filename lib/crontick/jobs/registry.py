"""The handler registry: job type -> function, filled by @crontick.handler and CRONTICK_HANDLERS."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from crontick.errors import ConfigError, StepError
from crontick.jobs import payloads
from crontick.jobs.job import Job
from crontick.retry import DEFAULT_POLICY, RetryPolicy
from crontick.text import text_problem, type_problem
from crontick.workflows import children

HandlerFunc = Callable[[Any, Job], Awaitable[None] | None]
# The claim reads up to this many unended jobs of each group it may start a wide job in
# (sql/functions/job_claim_due.sql, `side`), so the bound keeps that read small.
GROUP_CONCURRENCY_MAX = 1000


@dataclass(frozen=True)
class Handler:
    type: str
    func: HandlerFunc
    is_async: bool
    retry: RetryPolicy
    timeout_seconds: float | None
    # Flow control (CONTRACT.md "Flow control"): the priority a job of this type gets when
    # crontick.enqueue is not given one, how many jobs of one group may run at once, and the
    # declared rate limit (crontick.rate_limit) every start of this type counts against.
    priority: int = 0
    group_concurrency: int = 1
    rate_limit: str | None = None
    # The max_attempts a job of this type gets when its enqueue names none (None: the column's default, 4).
    max_attempts: int | None = None
    # Typed payloads: the pydantic model a payload of this type is checked against and handed over as
    # (crontick.jobs.payloads; `func` then makes it); None: the payload as JSON gives it.
    payload_model: Any = None


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
        from crontick.jobs import builtin

        for type, func in builtin.TYPES.items():
            handler(type)(func)


def handler(
    type: str,
    *,
    retry: RetryPolicy | None = None,
    timeout_seconds: float | None = None,
    priority: int = 0,
    group_concurrency: int = 1,
    rate_limit: str | None = None,
    max_attempts: int | None = None,
    payload: Any = None,
) -> Callable[[HandlerFunc], HandlerFunc]:
    """Register `func(payload, job)` (def or async def) as the handler for jobs of `type`.

    `retry` overrides the default 1/5/30-minute schedule for this type; `timeout_seconds`
    caps one attempt and is a promise: a job is started only when what is left of the tick's
    budget covers it (else it goes back, its attempt not counted, for a later tick), and a
    timeout above the whole budget is a ConfigError at start-up (check_budget).
    `priority` is what `crontick.enqueue` gives a job of this type when the call names none
    (smaller is claimed first); `group_concurrency` is how many jobs of one `group_key` may run at
    once (default 1: one at a time, in enqueue order); `rate_limit` names a limit declared with
    `crontick.rate_limit`, which every start of a job of this type counts against. `max_attempts` is
    what a job of this type gets when its enqueue names none (else 4); a job's own wins. `payload`, a
    pydantic model class (`crontick[pydantic]`): payloads are checked against it at enqueue and the
    handler is called with an instance of it (crontick.jobs.payloads).
    """
    _load_builtins()
    _check_options(type, priority, group_concurrency, timeout_seconds, rate_limit, max_attempts)
    if payload is not None:
        payloads.check_model(f"@crontick.handler({type!r})", payload)

    def register(func: HandlerFunc) -> HandlerFunc:
        existing = _registry.get(type)
        if existing is not None and existing.func is not func and _qualname(existing.func) != _qualname(func):
            raise ConfigError(
                f"@crontick.handler({type!r}): expected one handler per type, got a second one: "
                f"{_qualname(func)} (the first is {_qualname(existing.func)})"
            )
        _registry[type] = Handler(
            type=type,
            func=func if payload is None else payloads.typed(func, payload),
            is_async=inspect.iscoroutinefunction(func),
            retry=retry or DEFAULT_POLICY,
            timeout_seconds=timeout_seconds,
            priority=priority,
            group_concurrency=group_concurrency,
            rate_limit=rate_limit,
            max_attempts=max_attempts,
            payload_model=payload,
        )
        return func

    return register


def _check_options(
    type: str,
    priority: int,
    group_concurrency: int,
    timeout_seconds: float | None,
    rate_limit: str | None,
    max_attempts: int | None,
) -> None:
    """@crontick.handler's arguments, each refused with a one-line ConfigError naming the type."""
    if not type or not isinstance(type, str):
        raise ConfigError(f"@crontick.handler: expected a non-empty job type string, got: {type!r}")
    if problem := type_problem(type):
        raise ConfigError(f"@crontick.handler: {problem}")
    if isinstance(priority, bool) or not isinstance(priority, int) or not -(2**31) <= priority < 2**31:
        raise ConfigError(f"@crontick.handler({type!r}): expected priority as a 32-bit integer, got {priority!r}")
    if (
        isinstance(group_concurrency, bool)
        or not isinstance(group_concurrency, int)
        or not 1 <= group_concurrency <= GROUP_CONCURRENCY_MAX
    ):
        raise ConfigError(
            f"@crontick.handler({type!r}): expected group_concurrency as an integer from 1 to"
            f" {GROUP_CONCURRENCY_MAX}, got {group_concurrency!r}"
        )
    if timeout_seconds is not None and (
        isinstance(timeout_seconds, bool) or not isinstance(timeout_seconds, (int, float)) or not timeout_seconds > 0
    ):
        raise ConfigError(
            f"@crontick.handler({type!r}): expected timeout_seconds as a number of seconds above 0, got {timeout_seconds!r}"
        )
    if rate_limit is not None and (not isinstance(rate_limit, str) or not rate_limit):
        raise ConfigError(f"@crontick.handler({type!r}): expected rate_limit as a limit's name, got {rate_limit!r}")
    if problem := text_problem("rate_limit as a limit's name", rate_limit):  # every tick's claim carries it
        raise ConfigError(f"@crontick.handler({type!r}): {problem}")
    check_max_attempts(f"@crontick.handler({type!r})", max_attempts)


def check_budget(budget_seconds: float) -> None:
    """At start-up: a ConfigError naming each handler whose timeout_seconds exceeds the tick's whole budget.

    Such a job could never start (a job starts only when what is left of the budget covers its timeout).
    """
    over = sorted(
        h.type for h in _registry.values() if h.timeout_seconds is not None and h.timeout_seconds > budget_seconds
    )
    if over:
        declared = ", ".join(f"{t} ({_registry[t].timeout_seconds:g} s)" for t in over)
        raise ConfigError(
            f"@crontick.handler timeout_seconds: expected at most CRONTICK_TIME_BUDGET_SECONDS ({budget_seconds:g} s), "
            f"got {declared}: a job starts only when what is left of a tick's budget covers its timeout, so these "
            "would never start; lower the timeout or raise the budget"
        )


def unregister(type: str) -> None:
    """Forget the handler of `type` (tests that declare one for a while)."""
    _registry.pop(type, None)


def get(type: str) -> Handler | None:
    _load_builtins()
    return _registry.get(type)


def declared_priority(type: str) -> int:
    """The `priority=` the handler of `type` declares in this process, else 0 (crontick.enqueue's default).

    Read without loading the built-in types (their priority is 0): an app that only enqueues never loads them.
    """
    entry = _registry.get(type)
    return entry.priority if entry is not None else 0


def declared_max_attempts(type: str) -> int | None:
    """The `max_attempts=` the handler of `type` declares in this process, else None (the column's default).

    Read without loading the built-in types (they declare none), as declared_priority is.
    """
    entry = _registry.get(type)
    return entry.max_attempts if entry is not None else None


def payload_model(type: str) -> Any:
    """The pydantic model the handler of `type` declares in this process (`payload=`), else None."""
    entry = _registry.get(type)
    return entry.payload_model if entry is not None else None


def _spawned_payload(where: str, type: str, payload: Any) -> Any:
    """A child's payload for job.spawn, checked against its type's model as crontick.enqueue checks one; one that
    does not fit fails the parent at once (StepError, as job.spawn's other refusals: a retry spawns the same)."""
    model = payload_model(type)
    return payloads.plain(payload) if model is None else payloads.checked(where, model, payload, StepError)


children.payload_of = _spawned_payload


def _declared(type: str) -> tuple[int | None, int | None]:
    """(priority, max_attempts) the handler of `type` declares here: the defaults of job.spawn's children."""
    entry = _registry.get(type)
    return (entry.priority, entry.max_attempts) if entry is not None else (None, None)


children.declared = _declared


def check_max_attempts(where: str, max_attempts: Any) -> None:
    """A declared max_attempts (a handler's, an inbound hook's): None or a positive 32-bit integer, else ConfigError."""
    if max_attempts is not None and (
        isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not 1 <= max_attempts < 2**31
    ):
        raise ConfigError(f"{where}: expected max_attempts as an integer >= 1 or None, got {max_attempts!r}")


def rate_limited() -> list[tuple[str, str]]:
    """(type, limit name) of each handler that names a rate limit, without loading the built-ins (none does)."""
    return sorted((h.type, h.rate_limit) for h in _registry.values() if h.rate_limit is not None)


def group_wide() -> list[tuple[str, int]]:
    """(type, group_concurrency) of each handler that lets more than one job of a group run at once."""
    return sorted((h.type, h.group_concurrency) for h in _registry.values() if h.group_concurrency > 1)


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
