"""Inbound webhooks: `crontick.inbound(...)` declares POST /api/hooks/{name} (served by crontick.hook_endpoint)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .errors import ConfigError
from .settings import MIN_SECRET_CHARS, webhook_signing_key

VERIFIERS = ("twilio", "stripe", "github", "standard", "bearer")
# The variable each provider's secret is read from when `secret` is not given; None: per hook.
DEFAULT_SECRET_VARIABLES = {
    "twilio": "TWILIO_AUTH_TOKEN",
    "stripe": "STRIPE_WEBHOOK_SECRET",
    "github": "GITHUB_WEBHOOK_SECRET",
}
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


@dataclass(frozen=True)
class Hook:
    name: str
    job_type: str
    verify: str
    secret: str = field(repr=False)


_hooks: dict[str, Hook] = {}


def inbound(name: str, job_type: str, *, verify: str, secret: str | None = None) -> Hook:
    """Serve POST /api/hooks/{name}: each verified event becomes one job of `job_type`, deduplicated forever.

    `secret` defaults to the provider's usual variable (TWILIO_AUTH_TOKEN, STRIPE_WEBHOOK_SECRET,
    GITHUB_WEBHOOK_SECRET) or CRONTICK_HOOK_<NAME>_SECRET for `standard` and `bearer`; it is read
    now, so a missing one fails at startup, naming the variable, instead of refusing every event.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"crontick.inbound: expected a hook name of a-z, 0-9, - and _ (up to 63), got: {name!r}")
    if not isinstance(job_type, str) or not job_type:
        raise ConfigError(f"crontick.inbound({name!r}): expected a non-empty job type, got: {job_type!r}")
    if verify not in VERIFIERS:
        raise ConfigError(f"crontick.inbound({name!r}): expected verify in {', '.join(VERIFIERS)}, got: {verify!r}")
    variable = secret_variable(name, verify)
    value = secret if secret is not None else (os.environ.get(variable) or "").strip()
    _check_secret(name, verify, variable if secret is None else "secret=", value)
    hook = Hook(name, job_type, verify, value)
    existing = _hooks.get(name)
    if existing is not None and (existing.job_type, existing.verify) != (job_type, verify):
        raise ConfigError(
            f"crontick.inbound({name!r}): expected one declaration per hook, got a second one "
            f"({verify}, {job_type!r}; the first is {existing.verify}, {existing.job_type!r})"
        )
    _hooks[name] = hook
    return hook


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
    """The hook declared under `name`, if any (crontick.hook_endpoint, per request)."""
    return _hooks.get(name)


def hooks() -> dict[str, Hook]:
    return dict(_hooks)


def forget(name: str) -> None:
    """Remove a declaration (tests)."""
    _hooks.pop(name, None)
