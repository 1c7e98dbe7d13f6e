"""Configuration, read once from the environment into a frozen Settings; bad values fail fast."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .errors import ConfigError

MIN_SECRET_CHARS = 32
DEFAULT_BATCH_SIZE = 100
DEFAULT_TIME_BUDGET_SECONDS = 8.0
LEASE_MARGIN_SECONDS = 30.0
DEFAULT_CONCURRENCY = 10
DEFAULT_OIDC_ISSUER = "https://token.actions.githubusercontent.com"
REMINDER_CHANNELS = ("console", "email", "sms", "whatsapp", "webhook")


@dataclass(frozen=True)
class Settings:
    database_url: str | None = None
    cron_secret: str | None = field(default=None, repr=False)
    batch_size: int = DEFAULT_BATCH_SIZE
    time_budget_seconds: float = DEFAULT_TIME_BUDGET_SECONDS
    lease_seconds: float = DEFAULT_TIME_BUDGET_SECONDS + LEASE_MARGIN_SECONDS
    concurrency: int = DEFAULT_CONCURRENCY
    handler_modules: tuple[str, ...] = ()
    # Reminders and delivery (crontick.reminders, crontick.delivery).
    reminder_channel: str = "console"
    reminder_kinds: tuple[str, ...] = ("24h",)
    reminder_webhook_url: str | None = None
    reminder_webhook_secret: str | None = field(default=None, repr=False)
    email_api_url: str = "https://api.resend.com"
    email_api_key: str | None = field(default=None, repr=False)
    email_from: str | None = None
    twilio_api_url: str = "https://api.twilio.com"
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = field(default=None, repr=False)
    sms_from: str | None = None
    whatsapp_from: str | None = None
    # Auth methods beyond the bearer secret (crontick.auth); each is off until set.
    qstash_current_signing_key: str | None = field(default=None, repr=False)
    qstash_next_signing_key: str | None = field(default=None, repr=False)
    github_oidc_repository: str | None = None
    github_oidc_audience: str | None = None
    github_oidc_issuer: str = DEFAULT_OIDC_ISSUER
    github_oidc_refs: tuple[str, ...] = ()
    github_oidc_workflows: tuple[str, ...] = ()
    # The base URL schedulers call (https://app.example.com): QStash signs the full URL it calls and
    # short-lived tokens name it as their audience. Unset: taken from the request (x-forwarded-*).
    public_url: str | None = None

    @property
    def auth_configured(self) -> bool:
        return bool(self.cron_secret or self.qstash_current_signing_key or self.github_oidc_repository)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret value, so error text can be scrubbed of them before it is stored or logged."""
        values = (
            self.cron_secret,
            self.reminder_webhook_secret,
            self.email_api_key,
            self.twilio_auth_token,
            self.qstash_current_signing_key,
            self.qstash_next_signing_key,
        )
        return tuple(v for v in values if v)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        budget = _number(env, "CRONTICK_TIME_BUDGET_SECONDS", DEFAULT_TIME_BUDGET_SECONDS, minimum=0.1)
        lease = _number(env, "CRONTICK_LEASE_SECONDS", budget + LEASE_MARGIN_SECONDS, minimum=1.0)
        if lease <= budget:
            raise ConfigError(
                f"CRONTICK_LEASE_SECONDS: expected more than CRONTICK_TIME_BUDGET_SECONDS ({budget:g}) so a live "
                f"tick never loses its jobs to a rescue, got: {lease:g}"
            )
        channel = _text(env, "CRONTICK_REMINDER_CHANNEL") or "console"
        if channel not in REMINDER_CHANNELS:
            raise ConfigError(f"CRONTICK_REMINDER_CHANNEL: expected one of {', '.join(REMINDER_CHANNELS)}, got: {channel!r}")
        settings = cls(
            database_url=_text(env, "DATABASE_URL"),
            cron_secret=_secret(env, "CRON_SECRET"),
            batch_size=int(_number(env, "CRONTICK_BATCH_SIZE", DEFAULT_BATCH_SIZE, minimum=1, integer=True)),
            time_budget_seconds=budget,
            lease_seconds=lease,
            concurrency=int(_number(env, "CRONTICK_CONCURRENCY", DEFAULT_CONCURRENCY, minimum=1, integer=True)),
            handler_modules=_list(env, "CRONTICK_HANDLERS"),
            reminder_channel=channel,
            reminder_kinds=_list(env, "CRONTICK_REMINDER_KINDS") or ("24h",),
            reminder_webhook_url=_text(env, "CRONTICK_REMINDER_WEBHOOK_URL"),
            reminder_webhook_secret=_text(env, "CRONTICK_REMINDER_WEBHOOK_SECRET"),
            email_api_url=_text(env, "CRONTICK_EMAIL_API_URL") or "https://api.resend.com",
            email_api_key=_text(env, "RESEND_API_KEY"),
            email_from=_text(env, "CRONTICK_EMAIL_FROM"),
            twilio_api_url=_text(env, "CRONTICK_TWILIO_API_URL") or "https://api.twilio.com",
            twilio_account_sid=_text(env, "TWILIO_ACCOUNT_SID"),
            twilio_auth_token=_text(env, "TWILIO_AUTH_TOKEN"),
            sms_from=_text(env, "CRONTICK_SMS_FROM"),
            whatsapp_from=_text(env, "CRONTICK_WHATSAPP_FROM"),
            qstash_current_signing_key=_text(env, "QSTASH_CURRENT_SIGNING_KEY"),
            qstash_next_signing_key=_text(env, "QSTASH_NEXT_SIGNING_KEY"),
            github_oidc_repository=_text(env, "CRONTICK_GITHUB_OIDC_REPOSITORY"),
            github_oidc_audience=_text(env, "CRONTICK_GITHUB_OIDC_AUDIENCE"),
            github_oidc_issuer=(_text(env, "CRONTICK_GITHUB_OIDC_ISSUER") or DEFAULT_OIDC_ISSUER).rstrip("/"),
            github_oidc_refs=_list(env, "CRONTICK_GITHUB_OIDC_REFS"),
            github_oidc_workflows=_list(env, "CRONTICK_GITHUB_OIDC_WORKFLOWS"),
            public_url=_base_url(env, "CRONTICK_PUBLIC_URL"),
        )
        if settings.github_oidc_repository and not settings.github_oidc_audience:
            raise ConfigError(
                "CRONTICK_GITHUB_OIDC_AUDIENCE: expected the audience your workflow requests (e.g. your app's URL) "
                "because CRONTICK_GITHUB_OIDC_REPOSITORY is set, got: nothing"
            )
        return settings

    def require_database_url(self) -> str:
        if not self.database_url:
            raise ConfigError(
                "DATABASE_URL: expected a PostgreSQL URL such as postgresql://user:pass@host:5432/db, got: nothing "
                "(set it, or use `make run` / `crontick dev`, which start an embedded PostgreSQL)"
            )
        return self.database_url


def _text(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _secret(env: Mapping[str, str], name: str) -> str | None:
    value = _text(env, name)
    if value is not None and len(value) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"{name}: expected at least {MIN_SECRET_CHARS} characters, got: {len(value)} "
            f"(generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return value


def _base_url(env: Mapping[str, str], name: str) -> str | None:
    value = _text(env, name)
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
        raise ConfigError(f"{name}: expected the public base URL, such as https://app.example.com, got: {value!r}")
    # A path is kept as a prefix: an API Gateway stage (/prod) is in the URL callers use but not in the path the app sees.
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def _list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    value = _text(env, name) or ""
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float, integer: bool = False) -> float:
    raw = _text(env, name)
    if raw is None:
        return default
    try:
        value = float(int(raw)) if integer else float(raw)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{name}: expected {kind}, got: {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name}: expected at least {minimum:g}, got: {raw!r}")
    return value
