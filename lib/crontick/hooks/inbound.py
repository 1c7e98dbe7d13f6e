"""Inbound webhooks: `crontick.inbound(...)` declares POST /api/hooks/{name} (served by crontick.hooks.endpoint)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from crontick import logs
from crontick.errors import ConfigError, CrontickError
from crontick.jobs.debounce import Debounce, fill, template_fields
from crontick.settings import MIN_SECRET_CHARS, declare_secret, webhook_signing_key
from crontick.text import can_store, fit_key, start_by_params, type_problem

VERIFIERS = ("twilio", "stripe", "github", "standard", "bearer")
# The variable each provider's secret is read from when `secret` is not given; None: per hook.
DEFAULT_SECRET_VARIABLES = {
    "twilio": "TWILIO_AUTH_TOKEN",
    "stripe": "STRIPE_WEBHOOK_SECRET",
    "github": "GITHUB_WEBHOOK_SECRET",
}
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


# Per event, from what the sender sent: a Debounce (a template whose key names event fields, or a
# function of the event), a group key (a template such as "conv:{From}", or a function).
DebounceOption = Debounce | Callable[[Any], Debounce | None] | None
GroupKeyOption = str | Callable[[Any], str | None] | None
# The event key a hook signals (crontick.signal) per event: a template such as "sms:{MessageSid}", or a function.
SignalOption = str | Callable[[Any], str | None] | None


class Flow(NamedTuple):
    """The flow control of one event's job: its group and its debounce (None: none)."""

    group_key: str | None = None
    debounce: Debounce | None = None


@dataclass(frozen=True)
class Hook:
    name: str
    job_type: str  # "": no job, the hook only signals (signal=)
    verify: str
    secret: str = field(repr=False)
    debounce: DebounceOption = None
    group_key: GroupKeyOption = None
    signal: SignalOption = None
    max_attempts: int | None = None  # its jobs' max_attempts (None: the handler's max_attempts=, else 4)
    start_by_seconds: float | None = None  # its jobs' deadline to start, from the event's arrival (None: none)

    def event_key(self, event: Any) -> str | None:
        """The key this event signals (None: none; a field missing or a function that fails is logged)."""
        if isinstance(self.signal, str):
            key = fill(self.signal, event)
        elif self.signal is not None:
            key = self._call(self.signal, event, "signal")
        else:
            return None
        if key is None or not isinstance(key, str) or not key or not can_store(key):
            logs.warning("inbound_signal_skipped", hook=self.name, got=repr(key)[:100])
            return None
        return fit_key(key)

    def flow(self, event: Any) -> Flow:
        """This event's group key and debounce. One the event cannot give (a field missing, a function that
        raises or answers something else) is left out, and logged: the event is never lost for it.

        The keys come from what the sender sent (its `From`, say), which may be longer than a key can be
        (crontick.text.KEY_MAX_BYTES). Refusing the event would lose it, and dropping its group or debounce would
        let that sender's jobs run out of order; so a key over the bound is replaced by a stable digest
        (crontick.text.fit_key), the same for each event of that sender. A signal's event key is fitted alike."""
        group_key, debounce = None, None
        if isinstance(self.group_key, str):
            group_key = fill(self.group_key, event)
        elif self.group_key is not None:
            group_key = self._call(self.group_key, event, "group_key")
            if group_key is not None and (not isinstance(group_key, str) or not group_key or not can_store(group_key)):
                logs.warning("inbound_flow_ignored", hook=self.name, option="group_key", got=repr(group_key)[:100])
                group_key = None
        if group_key is not None:
            group_key = fit_key(group_key)
        if isinstance(self.debounce, Debounce):
            debounce = self.debounce.for_event(event)
        elif self.debounce is not None:
            debounce = self._call(self.debounce, event, "debounce")
            if debounce is not None and not isinstance(debounce, Debounce):
                logs.warning("inbound_flow_ignored", hook=self.name, option="debounce", got=repr(debounce)[:100])
                debounce = None
        return Flow(group_key, debounce)

    def _call(self, option: Callable[[Any], Any], event: Any, name: str) -> Any:
        try:
            return option(event)
        except Exception as exc:  # noqa: BLE001 - the app's function: its event is still recorded, without it
            logs.warning("inbound_flow_failed", hook=self.name, option=name, error=f"{type(exc).__name__}: {exc}")
            return None


_hooks: dict[str, Hook] = {}


def inbound(
    name: str,
    job_type: str | None = None,
    *,
    verify: str,
    secret: str | None = None,
    debounce: DebounceOption = None,
    group_key: GroupKeyOption = None,
    signal: SignalOption = None,
    max_attempts: int | None = None,
    start_by_seconds: float | None = None,
) -> Hook:
    """Serve POST /api/hooks/{name}: each verified event becomes one job of `job_type`, deduplicated for
    30 days (crontick.tick.retention.KEEP_INBOUND_EVENTS) on what its sender signed.

    `debounce` merges a sender's burst into one job: a `crontick.Debounce` whose key is a template
    of the event's top-level fields (`Debounce("{From}", 3, max_seconds=20)`: one job per WhatsApp
    sender, run 3 s after their last message, at most 20 s after the first; the handler reads every
    message in `job.payloads`), or a function of the event that returns a Debounce or None.
    `group_key` (a template such as `"conv:{From}"`, or a function of the event) puts each event's job
    in that group: a conversation's replies run one at a time, in order. An event that lacks a field
    a template names gets no debounce (or no group) and is still enqueued.

    `signal` (a template such as `"sms:{MessageSid}"`, or a function of the event returning a key or
    None) sends `crontick.signal(key, payload)` for each new event, with the payload a job of the hook
    would get (`{"hook", "event_id", "received_at", "event"}`): a workflow waiting in
    `job.wait_for(..., key)` resumes with it. The event is recorded and the signal sent in one
    transaction, and a redelivered event signals nothing. With `signal` and no `job_type` the hook
    only signals; with both it enqueues and signals.

    `max_attempts` is what each of its jobs gets (None: the handler's `max_attempts=`, else 4).
    `start_by_seconds` is each job's deadline to start, counted from the event's arrival (as `crontick.enqueue`'s
    `start_by=` in seconds): a job not started by then ends `cancelled`, "expired: ...", and never runs (a reply ten
    minutes late is worse than none). None: no deadline.

    `secret` defaults to the provider's usual variable (TWILIO_AUTH_TOKEN, STRIPE_WEBHOOK_SECRET,
    GITHUB_WEBHOOK_SECRET) or CRONTICK_HOOK_<NAME>_SECRET for `standard` and `bearer`; it is read
    now, so a missing one fails at startup, naming the variable, instead of refusing every event.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"crontick.inbound: expected a hook name of a-z, 0-9, - and _ (up to 63), got: {name!r}")
    if job_type is None and signal is None:
        raise ConfigError(f"crontick.inbound({name!r}): expected a job type, a signal= or both, got neither")
    if job_type is not None and (not isinstance(job_type, str) or not job_type):
        raise ConfigError(f"crontick.inbound({name!r}): expected a non-empty job type, got: {job_type!r}")
    if problem := type_problem(job_type):
        raise ConfigError(f"crontick.inbound({name!r}): {problem}")
    if job_type is None and (debounce is not None or group_key is not None):
        raise ConfigError(f"crontick.inbound({name!r}): expected a job type with debounce= or group_key=, got none")
    _check_signal(name, signal)
    if verify not in VERIFIERS:
        raise ConfigError(f"crontick.inbound({name!r}): expected verify in {', '.join(VERIFIERS)}, got: {verify!r}")
    _check_flow(name, debounce, group_key)
    from crontick.jobs import registry  # at declaration only: a tick's cold start does not load the handlers' registry

    registry.check_max_attempts(f"crontick.inbound({name!r})", max_attempts)
    _check_start_by(name, job_type, start_by_seconds)
    variable = secret_variable(name, verify)
    value = secret if secret is not None else (os.environ.get(variable) or "").strip()
    _check_secret(name, verify, variable if secret is None else "secret=", value)
    declare_secret(value)  # scrubbed from stored errors and alerts like the Settings' own secrets
    hook = Hook(name, job_type or "", verify, value, debounce, group_key, signal, max_attempts, start_by_seconds)
    existing = _hooks.get(name)
    if existing is not None and (existing.job_type, existing.verify) != (job_type or "", verify):
        raise ConfigError(
            f"crontick.inbound({name!r}): expected one declaration per hook, got a second one "
            f"({verify}, {job_type!r}; the first is {existing.verify}, {existing.job_type!r})"
        )
    _hooks[name] = hook
    return hook


def _check_flow(name: str, debounce: DebounceOption, group_key: GroupKeyOption) -> None:
    where = f"crontick.inbound({name!r})"
    if isinstance(debounce, Debounce):
        template_fields(debounce.key, f"{where}: debounce key")
    elif debounce is not None and not callable(debounce):
        raise ConfigError(
            f"{where}: expected debounce as a crontick.Debounce or a function of the event, got: {debounce!r}"
        )
    if isinstance(group_key, str):
        if not group_key:
            raise ConfigError(f"{where}: expected group_key as a non-empty template such as 'conv:{{From}}', got ''")
        template_fields(group_key, f"{where}: group_key")
    elif group_key is not None and not callable(group_key):
        raise ConfigError(f"{where}: expected group_key as a template or a function of the event, got: {group_key!r}")


def _check_start_by(name: str, job_type: str | None, start_by_seconds: object) -> None:
    """Seconds, as enqueue's start_by takes them (a datetime would be one fixed time for every event to come)."""
    if start_by_seconds is None:
        return
    where = f"crontick.inbound({name!r})"
    if job_type is None:
        raise ConfigError(f"{where}: expected a job type with start_by_seconds=, got none (the hook only signals)")
    if isinstance(start_by_seconds, datetime):
        raise ConfigError(f"{where}: expected start_by_seconds as seconds from each event's arrival, got a datetime")
    try:
        start_by_params(f"{where}: start_by_seconds", start_by_seconds)
    except CrontickError as exc:
        raise ConfigError(str(exc)) from None


def _check_signal(name: str, signal: SignalOption) -> None:
    if isinstance(signal, str):
        if not signal:
            raise ConfigError(
                f"crontick.inbound({name!r}): expected signal as a template such as 'sms:{{MessageSid}}', got ''"
            )
        template_fields(signal, f"crontick.inbound({name!r}): signal")
    elif signal is not None and not callable(signal):
        raise ConfigError(
            f"crontick.inbound({name!r}): expected signal as a template or a function of the event, got: {signal!r}"
        )


def secret_variable(name: str, verify: str) -> str:
    return DEFAULT_SECRET_VARIABLES.get(verify) or f"CRONTICK_HOOK_{name.upper().replace('-', '_')}_SECRET"


def _check_secret(name: str, verify: str, where: str, value: str) -> None:
    if not value:
        raise ConfigError(f"{where}: expected the {verify} signing secret for inbound hook {name!r}, got: nothing")
    if verify == "standard":
        try:
            webhook_signing_key(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: inbound hook {name!r}: {exc}") from None
    if verify == "bearer" and len(value) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"{where}: expected at least {MIN_SECRET_CHARS} characters for inbound hook {name!r}, got: {len(value)}"
        )


def find(name: str) -> Hook | None:
    """The hook declared under `name`, if any (crontick.hooks.endpoint, per request)."""
    return _hooks.get(name)


def hooks() -> dict[str, Hook]:
    return dict(_hooks)


def forget(name: str) -> None:
    """Remove a declaration (tests)."""
    _hooks.pop(name, None)
