"""Configuration, read once from the environment into a frozen Settings; bad values fail fast."""

from __future__ import annotations

import base64
import binascii
import math
import os
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .errors import ConfigError, DatabaseUrlError

MIN_SECRET_CHARS = 32
DEFAULT_BATCH_SIZE = 100
DEFAULT_TIME_BUDGET_SECONDS = 8.0
LEASE_MARGIN_SECONDS = 30.0
DEFAULT_CONCURRENCY = 10
DEFAULT_OIDC_ISSUER = "https://token.actions.githubusercontent.com"
REMINDER_CHANNELS = ("console", "email", "sms", "whatsapp", "webhook")
DEFAULT_DELIVERY_TIMEOUT_SECONDS = 10.0
# The variables a reminder template may use (crontick.reminders renders them; README lists them).
REMINDER_TEMPLATE_VARIABLES = (
    "customer_name",
    "first_name",
    "booking_id",
    "kind",
    "day",
    "date",
    "time",
    "zone",
    "time_zone",
    "starts_at",
    "starts_at_utc",
)
DEFAULT_REMINDER_SUBJECT = "Reminder: your appointment {day} at {time}"
# Security hardening (issue 10): upper bounds, so a typo cannot make a tick claim a million rows or run for hours.
MAX_BATCH_SIZE = 10_000
MAX_TIME_BUDGET_SECONDS = 900.0  # 15 minutes: AWS Lambda's limit, and more than Vercel's default
MAX_CONCURRENCY = 256
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
MAX_MAX_BODY_BYTES = 64 * 1024 * 1024
DEFAULT_REMINDER_TEMPLATE = "Hi {first_name}, a reminder: your appointment is {day}, {date} at {time} ({zone})."
DEFAULT_SCHEDULE_GRACE_SECONDS = 900.0  # schedules: catch_up="skip" runs a slot at most this late
# Health, alerts and retention: a tick is expected this often; finished jobs are kept this long.
DEFAULT_EXPECTED_INTERVAL_SECONDS = 900.0
DEFAULT_KEEP_DONE_DAYS = 7.0
DEFAULT_KEEP_FAILED_DAYS = 30.0
_KIND = re.compile(r"^([1-9][0-9]*)([mhd])$")
_KIND_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}


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
    reminder_subject: str = DEFAULT_REMINDER_SUBJECT
    reminder_template: str = DEFAULT_REMINDER_TEMPLATE
    delivery_timeout_seconds: float = DEFAULT_DELIVERY_TIMEOUT_SECONDS
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
    # Security hardening (issue 10, crontick.http_body, crontick.netguard, crontick.auth).
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES  # the largest request body read (413 above)
    trust_forwarded: bool = False  # X-Forwarded-Host/-Proto decide the URL only when the operator says so
    webhook_deny_private: bool = True  # outbound webhooks refuse loopback, private and link-local addresses
    github_oidc_repository_id: str | None = None  # pins the numeric id: a re-created repository does not match
    # Schedules (crontick.schedules): how old the newest missed slot of a catch_up="skip" schedule may be and still run.
    schedule_grace_seconds: float = DEFAULT_SCHEDULE_GRACE_SECONDS
    # Prompt start (crontick.kick): off | inline | http. from_env picks it per host when CRONTICK_KICK is unset.
    kick: str = "inline"
    # Admin (crontick.admin): the admin secret opens it, the viewer secret opens it read-only;
    # the admin stays closed while the admin secret is unset. Never CRON_SECRET (see _admin_secrets).
    admin_secret: str | None = field(default=None, repr=False)
    admin_viewer_secret: str | None = field(default=None, repr=False)
    # Health, alerts and retention (crontick.health, crontick.alerts, crontick.retention).
    expected_interval_seconds: float = DEFAULT_EXPECTED_INTERVAL_SECONDS
    alert_webhook_url: str | None = field(default=None, repr=False)  # a Slack URL's path is its secret
    alert_webhook_secret: str | None = field(default=None, repr=False)
    keep_done_days: float = DEFAULT_KEEP_DONE_DAYS
    keep_failed_days: float = DEFAULT_KEEP_FAILED_DAYS

    @property
    def auth_configured(self) -> bool:
        return bool(self.cron_secret or self.qstash_current_signing_key or self.github_oidc_repository)

    @property
    def reminder_channels(self) -> tuple[str, ...]:
        """The channel preference list: each reminder goes over the first one its booking can receive."""
        return tuple(c.strip() for c in self.reminder_channel.split(",") if c.strip())

    @property
    def reminder_leads(self) -> tuple[tuple[str, timedelta], ...]:
        """(kind, how long before the start it is due), longest first: ('24h', 24 h), ('1h', 1 h)."""
        return tuple(sorted(((k, kind_lead(k)) for k in self.reminder_kinds), key=lambda kl: kl[1], reverse=True))

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
            self.admin_secret,
            self.admin_viewer_secret,
            self.alert_webhook_url,
            self.alert_webhook_secret,
        )
        return tuple(v for v in values if v)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        budget = _number(
            env,
            "CRONTICK_TIME_BUDGET_SECONDS",
            DEFAULT_TIME_BUDGET_SECONDS,
            minimum=0.1,
            maximum=MAX_TIME_BUDGET_SECONDS,
        )
        lease = _number(env, "CRONTICK_LEASE_SECONDS", budget + LEASE_MARGIN_SECONDS, minimum=1.0)
        if lease <= budget:
            raise ConfigError(
                f"CRONTICK_LEASE_SECONDS: expected more than CRONTICK_TIME_BUDGET_SECONDS ({budget:g}) so a live "
                f"tick never loses its jobs to a rescue, got: {lease:g}"
            )
        channel = _channels(env, "CRONTICK_REMINDER_CHANNEL")
        settings = cls(
            database_url=_database_url(env),
            cron_secret=_secret(env, "CRON_SECRET"),
            batch_size=int(
                _number(env, "CRONTICK_BATCH_SIZE", DEFAULT_BATCH_SIZE, minimum=1, maximum=MAX_BATCH_SIZE, integer=True)
            ),
            time_budget_seconds=budget,
            lease_seconds=lease,
            concurrency=int(
                _number(
                    env, "CRONTICK_CONCURRENCY", DEFAULT_CONCURRENCY, minimum=1, maximum=MAX_CONCURRENCY, integer=True
                )
            ),
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
            reminder_subject=_template(env, "CRONTICK_REMINDER_SUBJECT", DEFAULT_REMINDER_SUBJECT),
            reminder_template=_template(env, "CRONTICK_REMINDER_TEMPLATE", DEFAULT_REMINDER_TEMPLATE),
            delivery_timeout_seconds=_number(
                env, "CRONTICK_DELIVERY_TIMEOUT_SECONDS", DEFAULT_DELIVERY_TIMEOUT_SECONDS, minimum=0.1
            ),
            qstash_current_signing_key=_text(env, "QSTASH_CURRENT_SIGNING_KEY"),
            qstash_next_signing_key=_text(env, "QSTASH_NEXT_SIGNING_KEY"),
            github_oidc_repository=_text(env, "CRONTICK_GITHUB_OIDC_REPOSITORY"),
            github_oidc_audience=_text(env, "CRONTICK_GITHUB_OIDC_AUDIENCE"),
            github_oidc_issuer=(_text(env, "CRONTICK_GITHUB_OIDC_ISSUER") or DEFAULT_OIDC_ISSUER).rstrip("/"),
            github_oidc_refs=_list(env, "CRONTICK_GITHUB_OIDC_REFS"),
            github_oidc_workflows=_list(env, "CRONTICK_GITHUB_OIDC_WORKFLOWS"),
            public_url=_base_url(env, "CRONTICK_PUBLIC_URL"),
            # Security hardening (issue 10).
            max_body_bytes=int(
                _number(
                    env,
                    "CRONTICK_MAX_BODY_BYTES",
                    DEFAULT_MAX_BODY_BYTES,
                    minimum=1024,
                    maximum=MAX_MAX_BODY_BYTES,
                    integer=True,
                )
            ),
            trust_forwarded=_flag(env, "CRONTICK_TRUST_FORWARDED", default=False),
            webhook_deny_private=_flag(env, "CRONTICK_WEBHOOK_DENY_PRIVATE", default=True),
            github_oidc_repository_id=_text(env, "CRONTICK_GITHUB_OIDC_REPOSITORY_ID"),
            # Schedules
            schedule_grace_seconds=_number(
                env, "CRONTICK_SCHEDULE_GRACE_SECONDS", DEFAULT_SCHEDULE_GRACE_SECONDS, minimum=1
            ),
            kick=_kick_mode(env),
            **_admin_secrets(env),
            # Health, alerts and retention.
            expected_interval_seconds=_number(
                env, "CRONTICK_EXPECTED_INTERVAL_SECONDS", DEFAULT_EXPECTED_INTERVAL_SECONDS, minimum=60
            ),
            alert_webhook_url=_alert_url(env, "CRONTICK_ALERT_WEBHOOK_URL"),
            alert_webhook_secret=_signing_secret(env, "CRONTICK_ALERT_WEBHOOK_SECRET"),
            keep_done_days=_number(env, "CRONTICK_KEEP_DONE_DAYS", DEFAULT_KEEP_DONE_DAYS, minimum=0),
            keep_failed_days=_number(env, "CRONTICK_KEEP_FAILED_DAYS", DEFAULT_KEEP_FAILED_DAYS, minimum=0),
        )
        _check_public_url(settings)
        if settings.kick == "http" and env.get("CRONTICK_KICK") and not (settings.cron_secret and settings.public_url):
            raise ConfigError(
                "CRONTICK_KICK: expected CRON_SECRET and CRONTICK_PUBLIC_URL to be set for the http kick "
                "(it calls the app's own tick URL with a token signed with CRON_SECRET), got: "
                + ("no CRONTICK_PUBLIC_URL" if settings.cron_secret else "no CRON_SECRET")
            )
        if settings.github_oidc_repository and not settings.github_oidc_audience:
            raise ConfigError(
                "CRONTICK_GITHUB_OIDC_AUDIENCE: expected the audience your workflow requests (e.g. your app's URL) "
                "because CRONTICK_GITHUB_OIDC_REPOSITORY is set, got: nothing"
            )
        _check_reminders(settings)
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


def _admin_secrets(env: Mapping[str, str]) -> dict[str, str | None]:
    """The admin's two secrets (crontick.admin): each 32+ characters, and none equal to another or
    to CRON_SECRET, which Vercel sends with every cron call and so must never open the admin."""
    cron = _text(env, "CRON_SECRET")
    admin = _secret(env, "CRONTICK_ADMIN_SECRET")
    viewer = _secret(env, "CRONTICK_ADMIN_VIEWER_SECRET")
    for name, value in (("CRONTICK_ADMIN_SECRET", admin), ("CRONTICK_ADMIN_VIEWER_SECRET", viewer)):
        if value is not None and value == cron:
            raise ConfigError(
                f"{name}: expected a secret of its own, got the value of CRON_SECRET "
                "(the scheduler sends that one with every call; it must never open the admin)"
            )
    if admin is not None and admin == viewer:
        raise ConfigError(
            "CRONTICK_ADMIN_VIEWER_SECRET: expected a secret other than CRONTICK_ADMIN_SECRET, "
            "got the same value (the viewer would have the admin's role)"
        )
    return {"admin_secret": admin, "admin_viewer_secret": viewer}


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


def _number(
    env: Mapping[str, str],
    name: str,
    default: float,
    *,
    minimum: float,
    maximum: float = math.inf,
    integer: bool = False,
) -> float:
    raw = _text(env, name)
    if raw is None:
        return default
    try:
        value = float(int(raw)) if integer else float(raw)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{name}: expected {kind}, got: {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name}: expected a finite number, got: {raw!r}")
    if value < minimum:
        raise ConfigError(f"{name}: expected at least {minimum:g}, got: {raw!r}")
    if value > maximum:
        plain = str(int(maximum)) if float(maximum).is_integer() else f"{maximum:g}"
        raise ConfigError(f"{name}: expected at most {plain}, got: {raw!r}")
    return value


def _flag(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = (_text(env, name) or "").lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}: expected 1 or 0, got: {raw!r}")


def _check_public_url(s: Settings) -> None:
    """QStash signs the full URL it calls: without a trusted base URL, a client's headers would decide it."""
    if s.qstash_current_signing_key and not (s.public_url or s.trust_forwarded):
        raise ConfigError(
            "CRONTICK_PUBLIC_URL: expected the base URL QStash calls (such as https://app.example.com) because "
            "QSTASH_CURRENT_SIGNING_KEY is set, got: nothing (or set CRONTICK_TRUST_FORWARDED=1 when a proxy you "
            "control sets X-Forwarded-Host and X-Forwarded-Proto)"
        )


def _database_url(env: Mapping[str, str]) -> str | None:
    """DATABASE_URL, its syntax checked now (no connection is made) so a typo fails at startup."""
    url = _text(env, "DATABASE_URL")
    if url is not None:
        try:
            conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise DatabaseUrlError(url, exc) from None  # not chained: psycopg's text may quote the password
    return url


def _alert_url(env: Mapping[str, str], name: str) -> str | None:
    """CRONTICK_ALERT_WEBHOOK_URL, checked now; the message never repeats it (a Slack URL's path is a secret)."""
    value = _text(env, name)
    if value is not None:
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise ConfigError(
                f"{name}: expected an http:// or https:// URL such as https://hooks.slack.com/services/…, "
                f"got: a value starting {value[:8]!r}"
            )
    return value


def _signing_secret(env: Mapping[str, str], name: str) -> str | None:
    value = _text(env, name)
    if value is not None:
        try:
            webhook_signing_key(value)
        except ValueError as exc:
            raise ConfigError(f"{name}: {exc}") from None
    return value


# Prompt start (crontick.kick): the kick modes, and the default per host.
KICK_MODES = ("off", "inline", "http")


def _kick_mode(env: Mapping[str, str]) -> str:
    """CRONTICK_KICK, else per host: http on AWS Lambda (it freezes once the handler returns), else
    inline (a long-running server, and Vercel, which waits for an ASGI app's background work)."""
    value = (_text(env, "CRONTICK_KICK") or "").lower()
    if not value:
        return "http" if _text(env, "AWS_LAMBDA_FUNCTION_NAME") else "inline"
    if value not in KICK_MODES:
        raise ConfigError(f"CRONTICK_KICK: expected one of {', '.join(KICK_MODES)}, got: {value!r}")
    return value


def kind_lead(kind: str) -> timedelta:
    """'24h' -> 24 hours: a reminder kind names how long before the start it is due (m, h or d)."""
    match = _KIND.match(kind)
    if match is None:
        raise ValueError(f"expected a reminder kind such as 24h, 90m or 2d, got: {kind!r}")
    return timedelta(seconds=int(match.group(1)) * _KIND_UNIT_SECONDS[match.group(2)])


def _channels(env: Mapping[str, str], name: str) -> str:
    channels = _list(env, name) or ("console",)
    for channel in channels:
        if channel not in REMINDER_CHANNELS:
            raise ConfigError(
                f"{name}: expected one of {', '.join(REMINDER_CHANNELS)} (or a fallback list such as email,sms), "
                f"got: {channel!r}"
            )
    if len(set(channels)) != len(channels):
        raise ConfigError(f"{name}: expected each channel once, got: {','.join(channels)!r}")
    return ",".join(channels)


def _template(env: Mapping[str, str], name: str, default: str) -> str:
    """A str.format template using only the documented variables, by plain name (no attribute access)."""
    value = env.get(name, "").strip() or default
    try:
        fields = [(f, spec or "") for _, f, spec, _ in string.Formatter().parse(value) if f is not None]
    except ValueError as exc:
        raise ConfigError(f"{name}: expected a template such as {default!r}, got: {value!r} ({exc})") from None
    for f, spec in fields:
        if f not in REMINDER_TEMPLATE_VARIABLES or "{" in spec:
            raise ConfigError(
                f"{name}: expected variables among {{{'}, {'.join(REMINDER_TEMPLATE_VARIABLES)}}} "
                f"(write {{{{ for a literal brace), got: {{{f}}}"
            )
    return value


# For each channel, the settings it cannot send without: (variable, value, what to put there).
def _channel_requirements(s: Settings) -> dict[str, list[tuple[str, str | None, str]]]:
    twilio = [
        ("TWILIO_ACCOUNT_SID", s.twilio_account_sid, "your Twilio Account SID (AC…)"),
        ("TWILIO_AUTH_TOKEN", s.twilio_auth_token, "your Twilio auth token"),
    ]
    return {
        "console": [],
        "email": [
            ("RESEND_API_KEY", s.email_api_key, "your email API key (re_…)"),
            ("CRONTICK_EMAIL_FROM", s.email_from, "a sender such as Clinic <reminders@clinic.example>"),
        ],
        "sms": [*twilio, ("CRONTICK_SMS_FROM", s.sms_from, "your Twilio number such as +15005550006")],
        "whatsapp": [*twilio, ("CRONTICK_WHATSAPP_FROM", s.whatsapp_from, "your WhatsApp sender such as +14155238886")],
        "webhook": [
            ("CRONTICK_REMINDER_WEBHOOK_URL", s.reminder_webhook_url, "an https:// URL that receives each reminder"),
            ("CRONTICK_REMINDER_WEBHOOK_SECRET", s.reminder_webhook_secret, "a Standard Webhooks secret (whsec_…)"),
        ],
    }


def require_channel(s: Settings, channel: str) -> None:
    """Raise ConfigError naming the first variable `channel` needs and is missing."""
    for variable, value, what in _channel_requirements(s)[channel]:
        if not value:
            raise ConfigError(f"{variable}: expected {what} for the {channel} channel, got: nothing")


def _check_reminders(s: Settings) -> None:
    """Fail at startup, naming the variable, rather than on the first send at 3 a.m."""
    for kind in s.reminder_kinds:
        try:
            kind_lead(kind)
        except ValueError as exc:
            raise ConfigError(f"CRONTICK_REMINDER_KINDS: {exc}") from None
    leads = [lead for _, lead in s.reminder_leads]
    if len(set(leads)) != len(leads):
        raise ConfigError(
            f"CRONTICK_REMINDER_KINDS: expected kinds with different offsets, got: {','.join(s.reminder_kinds)!r}"
        )
    for channel in s.reminder_channels:
        require_channel(s, channel)
    for variable, url in (
        ("CRONTICK_EMAIL_API_URL", s.email_api_url),
        ("CRONTICK_TWILIO_API_URL", s.twilio_api_url),
        ("CRONTICK_REMINDER_WEBHOOK_URL", s.reminder_webhook_url),
    ):
        parts = urlsplit(url or "https://unset.invalid")
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise ConfigError(f"{variable}: expected an http:// or https:// URL, got: {url!r}")
    if s.reminder_webhook_secret:
        try:
            webhook_signing_key(s.reminder_webhook_secret)
        except ValueError as exc:
            raise ConfigError(f"CRONTICK_REMINDER_WEBHOOK_SECRET: {exc}") from None


def webhook_signing_key(secret: str) -> bytes:
    """The HMAC key of a Standard Webhooks secret: base64 after an optional whsec_ prefix."""
    try:
        key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("expected whsec_ followed by base64, got: a value that does not decode") from None
    if len(key) < 16:
        raise ValueError(f"expected a key of at least 16 bytes, got: {len(key)}")
    return key
