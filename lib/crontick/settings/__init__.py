"""Configuration, read once from the environment into a frozen Settings; bad values fail fast.

Each variable is declared once, as a row of the table below: the Settings field, its type and
default, the environment variable, its bounds, whether it is secret, and its doc line. From
that table come `Settings.from_env()`, `Settings.secrets` and the docs' configuration page
(docs/gen_reference.py).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

from crontick.errors import ConfigError
from crontick.settings import derived, extra_secrets, mail, source, variables, wakeups
from crontick.settings.extra_secrets import declare_secret
from crontick.settings.variables import (
    ADMIN,
    CORE,
    DEFAULT_BATCH_SIZE,
    DEFAULT_CONCURRENCY,
    DEFAULT_DELIVERY_TIMEOUT_SECONDS,
    DEFAULT_EXPECTED_INTERVAL_SECONDS,
    DEFAULT_KEEP_DONE_DAYS,
    DEFAULT_KEEP_FAILED_DAYS,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_OIDC_ISSUER,
    DEFAULT_REMINDER_SUBJECT,
    DEFAULT_REMINDER_TEMPLATE,
    DEFAULT_SCHEDULE_GRACE_SECONDS,
    DEFAULT_SCHEMA,
    DEFAULT_TIME_BUDGET_SECONDS,
    HOOKS,
    KICK_MODES,
    LEASE_MARGIN_SECONDS,
    MAX_BATCH_SIZE,
    MAX_CONCURRENCY,
    MAX_MAX_BODY_BYTES,
    MAX_TIME_BUDGET_SECONDS,
    MIN_MAX_BODY_BYTES,
    MIN_SECRET_CHARS,
    MONITORING,
    REMINDER_CHANNELS,
    REMINDER_TEMPLATE_VARIABLES,
    REMINDERS,
    ROW,
    SCHEDULER_AUTH,
    SCHEDULES,
    SLOW_JOB_SHARE_OF_BUDGET,
    Variable,
    kind_lead,
    schema_name,
    setting,
    webhook_signing_key,
)

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_DELIVERY_TIMEOUT_SECONDS",
    "DEFAULT_EXPECTED_INTERVAL_SECONDS",
    "DEFAULT_KEEP_DONE_DAYS",
    "DEFAULT_KEEP_FAILED_DAYS",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_OIDC_ISSUER",
    "DEFAULT_REMINDER_SUBJECT",
    "DEFAULT_REMINDER_TEMPLATE",
    "DEFAULT_SCHEDULE_GRACE_SECONDS",
    "DEFAULT_SCHEMA",
    "DEFAULT_TIME_BUDGET_SECONDS",
    "KICK_MODES",
    "LEASE_MARGIN_SECONDS",
    "SLOW_JOB_SHARE_OF_BUDGET",
    "MAX_BATCH_SIZE",
    "MAX_CONCURRENCY",
    "MAX_MAX_BODY_BYTES",
    "MAX_TIME_BUDGET_SECONDS",
    "MIN_SECRET_CHARS",
    "REMINDER_CHANNELS",
    "REMINDER_TEMPLATE_VARIABLES",
    "Settings",
    "schema_name",
    "Variable",
    "declare_secret",
    "kind_lead",
    "require_channel",
    "table",
    "webhook_signing_key",
]


_TWILIO = ("sms", "whatsapp")


@dataclass(frozen=True)
class Settings(wakeups.WakeupSettings, mail.MailSettings):
    """crontick's configuration: one field per row of the table of variables (see the module docstring)."""

    # fmt: off
    database_url: str | None = setting("DATABASE_URL", CORE, None, check=variables.database_url, doc="""PostgreSQL
        URL. Works through a transaction pooler (PgBouncer, Supavisor, Neon): crontick keeps no session state, uses no
        server-side prepared statements, no `LISTEN`, and only transaction-scoped advisory locks. `crontick dev`
        (`make run`) starts an embedded PostgreSQL when it is unset. Its password is scrubbed like a secret.""")
    cron_secret: str | None = setting("CRON_SECRET", CORE, None, secret=True, minimum=MIN_SECRET_CHARS, doc="""The
        bearer secret for the tick; at least 32 characters or startup fails. Generate one with `python -c 'import
        secrets; print(secrets.token_urlsafe(32))'`. With no auth method configured the tick answers 503.""")
    batch_size: int = setting("CRONTICK_BATCH_SIZE", CORE, DEFAULT_BATCH_SIZE, minimum=1, maximum=MAX_BATCH_SIZE,
        doc="The most jobs one tick claims; the same bound applies to reminders.")
    time_budget_seconds: float = setting("CRONTICK_TIME_BUDGET_SECONDS", CORE, DEFAULT_TIME_BUDGET_SECONDS,
        minimum=0.1, maximum=MAX_TIME_BUDGET_SECONDS, doc="Wall time after which a tick claims and starts nothing new "
        "and returns `more: true` (safe under a 10 s function limit).")
    lease_seconds: float = setting("CRONTICK_LEASE_SECONDS", CORE, DEFAULT_TIME_BUDGET_SECONDS + LEASE_MARGIN_SECONDS,
        minimum=1.0, derive=derived.lease_after_budget, shown=f"budget + {LEASE_MARGIN_SECONDS:g} "
        f"(`{DEFAULT_TIME_BUDGET_SECONDS + LEASE_MARGIN_SECONDS:g}`)", doc="How long a claimed job may stay `running` "
        "before a later tick rescues it. Must exceed the time budget.")
    concurrency: int = setting("CRONTICK_CONCURRENCY", CORE, DEFAULT_CONCURRENCY, minimum=1, maximum=MAX_CONCURRENCY,
        doc="How many handlers (and reminder sends) of one tick run at the same time.")
    handler_modules: tuple[str, ...] = setting("CRONTICK_HANDLERS", CORE, (),
        doc="Comma-separated modules imported at startup; they register your `@crontick.handler`s.")
    unknown_type_grace_seconds: float = setting("CRONTICK_UNKNOWN_TYPE_GRACE_SECONDS", CORE, 3600.0, minimum=0,
        doc="How long a job of a type no running process knows waits (put back, no attempt spent, re-checked about "
        "every minute) before it fails naming the type: a rolling deploy or an old revision may not know a new type "
        "yet. `0` fails it at once.")
    slow_job_seconds: float = setting("CRONTICK_SLOW_JOB_SECONDS", CORE,
        DEFAULT_TIME_BUDGET_SECONDS * SLOW_JOB_SHARE_OF_BUDGET, minimum=0.0, derive=derived.slow_within_budget,
        shown=f"budget x {SLOW_JOB_SHARE_OF_BUDGET:g} (`{DEFAULT_TIME_BUDGET_SECONDS * SLOW_JOB_SHARE_OF_BUDGET:g}`)",
        doc="A job still running this long is logged once as `slow_job` (a warning, while it runs) and counted in the "
        "per-type figures and `crontick_slow_jobs_last_hour`, not failed. Keep it under the budget, which cuts jobs.")
    schema: str = setting("CRONTICK_SCHEMA", CORE, DEFAULT_SCHEMA, check=variables.schema, doc="The schema that holds "
        "everything crontick creates (tables, functions, triggers); every statement names it. `public` keeps an "
        "install from before 0.2 where it is (see [Jobs](jobs.md#where-crontick-lives-its-own-schema)).")
    # Reminders and delivery (crontick.reminders.send, crontick.channels), and the built-in job types.
    reminder_channel: str = setting("CRONTICK_REMINDER_CHANNEL", REMINDERS, "console", check=variables.channels,
        doc="`console`, `email`, `smtp`, `django`, `sms`, `whatsapp`, `webhook`, a channel your app registers, or a "
        "fallback list such as `email,sms` (see [Reminders](reminders.md#channels)).")
    reminder_kinds: tuple[str, ...] = setting("CRONTICK_REMINDER_KINDS", REMINDERS, ("24h",),
        check=variables.reminder_kinds, doc="Reminder kinds as offsets before `starts_at` (`m`, `h`, `d`), e.g. `24h,1h`.")
    reminder_source: str | None = setting("CRONTICK_REMINDER_SOURCE", REMINDERS, None, check=source.reminder_source,
        shown="`<CRONTICK_SCHEMA>.bookings`", doc="The table or view reminders are only read from, such as `public.appts`;"
        " set it for `crontick migrate` too (columns: [Reminders](reminders.md#reminders-from-your-own-table)).")
    reminder_webhook_url: str | None = setting("CRONTICK_REMINDER_WEBHOOK_URL", REMINDERS, None,
        check=variables.http_url, needed_by=("webhook",), needed_as="an https:// URL that receives each reminder",
        doc="Where the `webhook` channel POSTs each reminder as JSON.")
    reminder_webhook_secret: str | None = setting("CRONTICK_REMINDER_WEBHOOK_SECRET", REMINDERS, None, secret=True,
        check=variables.signing_secret, needed_by=("webhook",), needed_as="a Standard Webhooks secret (whsec_…)",
        doc="The Standard Webhooks signing secret (`whsec_…`) for that channel.")
    email_api_url: str = setting("CRONTICK_EMAIL_API_URL", REMINDERS, "https://api.resend.com", check=variables.http_url,
        doc="A Resend-compatible API (point it at a gateway or a test server).")
    email_api_key: str | None = setting("RESEND_API_KEY", REMINDERS, None, secret=True, needed_by=("email",),
        needed_as="your email API key (re_…)", doc="The `email` channel's and `send_email` jobs' API key (`re_…`).")
    email_from: str | None = setting("CRONTICK_EMAIL_FROM", REMINDERS, None, needed_by=("email", "smtp"),
        needed_as="a sender such as Clinic <reminders@clinic.example>",
        doc="The email sender, e.g. `Clinic <reminders@clinic.example>`; required by the `email` and `smtp` channels.")
    twilio_api_url: str = setting("CRONTICK_TWILIO_API_URL", REMINDERS, "https://api.twilio.com",
        check=variables.http_url, doc="The Twilio API base URL (a test server in the tests).")
    twilio_account_sid: str | None = setting("TWILIO_ACCOUNT_SID", REMINDERS, None, needed_by=_TWILIO,
        needed_as="your Twilio Account SID (AC…)",
        doc="Your Twilio Account SID (`AC…`), for the `sms` and `whatsapp` channels and jobs.")
    twilio_auth_token: str | None = setting("TWILIO_AUTH_TOKEN", REMINDERS, None, secret=True, needed_by=_TWILIO,
        needed_as="your Twilio auth token",
        doc="Your Twilio auth token (also the secret `twilio` inbound hooks verify with).")
    sms_from: str | None = setting("CRONTICK_SMS_FROM", REMINDERS, None, needed_by=("sms",),
        needed_as="your Twilio number such as +15005550006", doc="Your Twilio number (E.164) for the `sms` channel.")
    whatsapp_from: str | None = setting("CRONTICK_WHATSAPP_FROM", REMINDERS, None, needed_by=("whatsapp",),
        needed_as="your WhatsApp sender such as +14155238886", doc="Your WhatsApp sender for the `whatsapp` channel.")
    reminder_subject: str = setting("CRONTICK_REMINDER_SUBJECT", REMINDERS, DEFAULT_REMINDER_SUBJECT,
        check=variables.template,
        doc="The reminder's subject, a `str.format` template (see [Templates](reminders.md#templates)).")
    reminder_template: str = setting("CRONTICK_REMINDER_TEMPLATE", REMINDERS, DEFAULT_REMINDER_TEMPLATE,
        check=variables.template,
        doc="The reminder's text, a `str.format` template (see [Templates](reminders.md#templates)).")
    delivery_timeout_seconds: float = setting("CRONTICK_DELIVERY_TIMEOUT_SECONDS", REMINDERS,
        DEFAULT_DELIVERY_TIMEOUT_SECONDS, minimum=0.1,
        doc="Each provider call's timeout (also cut to what is left of the tick's budget).")
    # Auth methods beyond the bearer secret (crontick.auth.tick); each is off until set.
    qstash_current_signing_key: str | None = setting("QSTASH_CURRENT_SIGNING_KEY", SCHEDULER_AUTH, None, secret=True,
        doc="From the Upstash console. When set, a valid `Upstash-Signature` authorises a tick.")
    qstash_next_signing_key: str | None = setting("QSTASH_NEXT_SIGNING_KEY", SCHEDULER_AUTH, None, secret=True,
        doc="Tried when the current key fails, so key rotation works.")
    github_oidc_repository: str | None = setting("CRONTICK_GITHUB_OIDC_REPOSITORY", SCHEDULER_AUTH, None,
        doc="`owner/repo`. When set, a GitHub Actions OIDC token from that repository authorises a tick; no stored "
        "secret.")
    github_oidc_audience: str | None = setting("CRONTICK_GITHUB_OIDC_AUDIENCE", SCHEDULER_AUTH, None,
        doc="The audience the workflow requests (your app's base URL with `tick-oidc.yml`). Required with the "
        "repository.")
    github_oidc_issuer: str = setting("CRONTICK_GITHUB_OIDC_ISSUER", SCHEDULER_AUTH, DEFAULT_OIDC_ISSUER,
        check=variables.no_trailing_slash,
        doc="Change it only for GitHub Enterprise Server. Keys come from `<issuer>/.well-known/jwks`.")
    github_oidc_refs: tuple[str, ...] = setting("CRONTICK_GITHUB_OIDC_REFS", SCHEDULER_AUTH, (),
        doc="Optional, comma-separated allowed `ref` claims, e.g. `refs/heads/main`.")
    github_oidc_workflows: tuple[str, ...] = setting("CRONTICK_GITHUB_OIDC_WORKFLOWS", SCHEDULER_AUTH, (),
        doc="Optional, comma-separated allowed workflow files, matched against the path in `workflow_ref` only (such "
        "as `.github/workflows/tick-oidc.yml`); the `workflow` name claim is never trusted.")
    # The base URL schedulers call: QStash signs the full URL it calls, and short-lived tokens name it as
    # their audience. Unset: taken from the request (x-forwarded-*) only when trust_forwarded says so.
    public_url: str | None = setting("CRONTICK_PUBLIC_URL", CORE, None, check=variables.base_url,
        shown="unset (signed credentials off; QStash refuses to start)", doc="""The base URL callers reach crontick's app
        at, e.g. `https://app.example.com` (with an API Gateway stage: `https://abc.execute-api.eu-west-1.amazonaws.com/prod`;
        with crontick mounted under a prefix, the prefix too: `https://app.example.com/ops`). QStash signatures must
        name this URL plus the path inside crontick, short-lived tokens must have it as their audience, and the http
        kick calls it plus `/api/cron/tick`. Required with QStash (startup fails without it or `CRONTICK_TRUST_FORWARDED=1`); short-lived tokens stay off
        until it is set. See docs/security.md.""")
    # Security hardening (issue 10: crontick.http.body, crontick.http.netguard, crontick.auth.tick).
    max_body_bytes: int = setting("CRONTICK_MAX_BODY_BYTES", CORE, DEFAULT_MAX_BODY_BYTES, minimum=MIN_MAX_BODY_BYTES,
        maximum=MAX_MAX_BODY_BYTES, doc="The largest request body crontick reads (1024 bytes to 64 MiB); above it "
        "`413` JSON. The tick reads a body only for a QStash signature; inbound webhooks share the cap.")
    vercel_env: str | None = setting("VERCEL_ENV", CORE, None, doc="Set by Vercel (`production`, `preview`, "
        "`development`): in a preview deployment crontick refuses ticks and kicks, see `CRONTICK_ALLOW_PREVIEW`.")
    allow_preview: bool = setting("CRONTICK_ALLOW_PREVIEW", CORE, False, doc="`1` lets a Vercel preview deployment "
        "(`VERCEL_ENV=preview`) run ticks and kicks. Off by default: a preview that shares production's database "
        "would run production's jobs with the preview's code and send real reminders.")
    trust_forwarded: bool = setting("CRONTICK_TRUST_FORWARDED", CORE, False, doc="""`1` lets `X-Forwarded-Host` and
        `X-Forwarded-Proto` decide the URL signed credentials are checked against, instead of `CRONTICK_PUBLIC_URL`.
        Only behind a proxy you control that overwrites them (Vercel does): any client can send them.""")
    webhook_deny_private: bool = setting("CRONTICK_WEBHOOK_DENY_PRIVATE", CORE, True, doc="""The built-in `webhook`
        job refuses destinations that resolve to loopback, private, link-local (cloud metadata), CGNAT or IPv6 ULA
        addresses, checked on the resolved address at connect time. `0` turns it off: only when every webhook URL is
        yours. See docs/security.md.""")
    github_oidc_repository_id: str | None = setting("CRONTICK_GITHUB_OIDC_REPOSITORY_ID", SCHEDULER_AUTH, None,
        doc="Optional: the numeric `repository_id` the token must carry, so a deleted and re-created repository of "
        "the same name does not match.")
    # Schedules (crontick.schedules.registry).
    schedule_grace_seconds: float = setting("CRONTICK_SCHEDULE_GRACE_SECONDS", SCHEDULES,
        DEFAULT_SCHEDULE_GRACE_SECONDS, minimum=1, doc="How late the newest slot of a `catch_up=\"skip\"` schedule "
        "may be and still run (see [Recurring jobs](recurring-jobs.md)).")
    # Prompt start (crontick.hooks.kick).
    kick: str = setting("CRONTICK_KICK", HOOKS, "inline", check=variables.kick_mode, derive=derived.kick_for_host,
        shown="`http` on AWS Lambda, else `inline`", doc="""How a tick is started right after an inbound event or
        `crontick.kick()`: `off` (with `CRONTICK_WAKER` set, a wake-up booked for now instead), `inline` (a tick in this process after the response; Vercel waits for it) or `http`
        (a call to this app's own tick URL with a one-use token, for hosts that freeze after the response). See
        [Prompt start](prompt-start.md).""")
    # Admin (crontick.admin): see admin_roles.
    admin_secret: str | None = setting("CRONTICK_ADMIN_SECRET", ADMIN, None, secret=True, minimum=MIN_SECRET_CHARS,
        shown="unset: the admin is closed", doc="""Opens the admin: the pages at `/admin` and the JSON API at
        `/api/admin` (`Authorization: Bearer ...`). At least 32 characters, and never the value of `CRON_SECRET`
        (Vercel sends that one with every cron call) or of the viewer secret: startup refuses either with a one-line
        message, and Settings built in code with it equal to `CRON_SECRET` keep the admin closed. While unset,
        `/admin` answers 404 and `/api/admin` 503.""")
    admin_viewer_secret: str | None = setting("CRONTICK_ADMIN_VIEWER_SECRET", ADMIN, None, secret=True,
        minimum=MIN_SECRET_CHARS, shown="unset", doc="""Opens the admin read-only: no action buttons, and every `POST`
        answers 403. At least 32 characters, and different from `CRONTICK_ADMIN_SECRET` and `CRON_SECRET`.""")
    # Health, alerts and retention (crontick.tick.health, crontick.tick.alerts, crontick.tick.retention).
    expected_interval_seconds: float = setting("CRONTICK_EXPECTED_INTERVAL_SECONDS", MONITORING,
        DEFAULT_EXPECTED_INTERVAL_SECONDS, minimum=60, doc="""How often the scheduler calls the tick (at least 60).
        `/api/health` reports `stale` (and `?strict=1` answers 503) after twice this without a finished tick, and the
        first tick after such a silence raises a `scheduler_silent` alert. See [Monitoring](monitoring.md).""")
    alert_webhook_url: str | None = setting("CRONTICK_ALERT_WEBHOOK_URL", MONITORING, None, secret=True,
        check=variables.alert_url, shown="unset (alerts are recorded, not sent)", doc="""Where alerts are POSTed as
        Slack-compatible JSON: a Slack incoming webhook, a Discord webhook URL with `/slack` appended, or your own
        receiver. Its path is treated as a secret and never logged.""")
    alert_webhook_secret: str | None = setting("CRONTICK_ALERT_WEBHOOK_SECRET", MONITORING, None, secret=True,
        check=variables.signing_secret, doc="A Standard Webhooks secret (`whsec_…`); when set, each alert is signed "
        "(`webhook-id`, `webhook-timestamp`, `webhook-signature`).")
    keep_done_days: float = setting("CRONTICK_KEEP_DONE_DAYS", MONITORING, DEFAULT_KEEP_DONE_DAYS, minimum=0,
        doc="Days a `done` job is kept after its last change (`updated_at`); fractions allowed. Deleted in bounded "
        "batches by ticks.")
    keep_failed_days: float = setting("CRONTICK_KEEP_FAILED_DAYS", MONITORING, DEFAULT_KEEP_FAILED_DAYS, minimum=0,
        doc="Days a `failed` or `cancelled` job is kept after its last change (`updated_at`). Tick records, alerts, "
        "finished reminder sends and inbound events are kept 30 days, the admin audit 90.")
    # fmt: on

    @property
    def refuses_ticks(self) -> bool:
        """A Vercel preview deployment runs no tick and no kick unless CRONTICK_ALLOW_PREVIEW=1."""
        return self.vercel_env == "preview" and not self.allow_preview

    @property
    def auth_configured(self) -> bool:
        return bool(
            self.cron_secret or self.qstash_current_signing_key or self.github_oidc_repository or self.google_on
        )

    @property
    def reminder_channels(self) -> tuple[str, ...]:
        """The channel preference list: each reminder goes over the first one its booking can receive."""
        return tuple(c.strip() for c in self.reminder_channel.split(",") if c.strip())

    @property
    def reminder_source_parts(self) -> tuple[str, str]:
        """(schema, name) of the reminder source: CRONTICK_REMINDER_SOURCE, else crontick's own bookings."""
        return source.source_parts(self.reminder_source) if self.reminder_source else (self.schema, "bookings")

    @property
    def reminder_leads(self) -> tuple[tuple[str, timedelta], ...]:
        """(kind, how long before the start it is due), longest first: ('24h', 24 h), ('1h', 1 h)."""
        return tuple(sorted(((k, kind_lead(k)) for k in self.reminder_kinds), key=lambda kl: kl[1], reverse=True))

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret value, longest first, so text from outside can be scrubbed of them before it is stored or
        logged: each secret row's value, the DATABASE_URL password and each inbound hook's secret (declare_secret).
        Longest first: a secret that holds a shorter one is replaced whole. One shorter than
        MIN_SCRUBBED_CHARS is left out: replacing a word-sized string everywhere would wreck every
        error (a hook declared with secret "s"), and such a value protects nothing anyway."""
        found = {getattr(self, name) for name in _SECRET_FIELDS}
        found.update(extra_secrets.database_passwords(self.database_url or ""), extra_secrets.declared)
        return tuple(sorted((s for s in found if s and len(s) >= MIN_SCRUBBED_CHARS), key=lambda s: (-len(s), s)))

    @property
    def admin_roles(self) -> dict[str, str]:
        """The secret of each admin role that is set ("admin", "viewer"), however the Settings were built.

        The one rule of who may open the admin: a secret equal to CRON_SECRET opens nothing (the
        scheduler sends that one with every call). from_env refuses it at startup; Settings built
        in code keep the admin closed to it (crontick.admin.session and crontick.admin.gate).
        """
        import hmac  # constant time; only the admin's paths ask

        cron = (self.cron_secret or "").encode()
        roles = {"admin": self.admin_secret, "viewer": self.admin_viewer_secret}
        return {r: s for r, s in roles.items() if s and not (cron and hmac.compare_digest(s.encode(), cron))}

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Every row of the table read from `env` (default: os.environ), then the rows checked against each other."""
        env = os.environ if env is None else env
        got: dict[str, Any] = {}
        for name, kind, row in _FIELD_ROWS:
            got[name] = variables.read(row, kind, env, got)
        settings = cls(**got)
        _check(settings, env)
        return settings

    def require_database_url(self) -> str:
        if not self.database_url:
            raise ConfigError(
                "DATABASE_URL: expected a PostgreSQL URL such as postgresql://user:pass@host:5432/db, got: nothing "
                "(set it, or use `make run` / `crontick dev`, which start an embedded PostgreSQL)"
            )
        return self.database_url


# (field, its annotation, its row) for every Settings field, in the table's order.
_FIELD_ROWS: tuple[tuple[str, str, Variable], ...] = tuple(
    (f.name, str(f.type), f.metadata[ROW]) for f in fields(Settings)
)
# Secrets shorter than this are not scrubbed from text (Settings.secrets says why).
MIN_SCRUBBED_CHARS = 4
_SECRET_FIELDS = tuple(name for name, _, row in _FIELD_ROWS if row.secret)
if _unparsed := [f"{name}: {kind}" for name, kind, _ in _FIELD_ROWS if kind not in variables.PARSERS]:
    raise TypeError(f"expected Settings fields of a type crontick.settings.variables.PARSERS reads, got: {_unparsed}")


@functools.cache
def table() -> tuple[tuple[str | None, str, Variable], ...]:
    """The whole table, for the docs: (Settings field or None, its annotation or "", row), fields first."""
    return (*_FIELD_ROWS, *((None, "", row) for row in variables.ELSEWHERE))


def _check(s: Settings, env: Mapping[str, str]) -> None:
    """The checks across rows, after each was read: a bad combination fails at startup, naming a variable."""
    if s.lease_seconds <= s.time_budget_seconds:
        raise ConfigError(
            f"CRONTICK_LEASE_SECONDS: expected more than CRONTICK_TIME_BUDGET_SECONDS ({s.time_budget_seconds:g}) so "
            f"a live tick never loses its jobs to a rescue, got: {s.lease_seconds:g}"
        )
    # QStash signs the full URL it calls: without a trusted base URL, a client's headers would decide it.
    if s.qstash_current_signing_key and not (s.public_url or s.trust_forwarded):
        raise ConfigError(
            "CRONTICK_PUBLIC_URL: expected the base URL QStash calls (such as https://app.example.com) because "
            "QSTASH_CURRENT_SIGNING_KEY is set, got: nothing (or set CRONTICK_TRUST_FORWARDED=1 when a proxy you "
            "control sets X-Forwarded-Host and X-Forwarded-Proto)"
        )
    if s.kick == "http" and variables.text(env, "CRONTICK_KICK") and not (s.cron_secret and s.public_url):
        raise ConfigError(
            "CRONTICK_KICK: expected CRON_SECRET and CRONTICK_PUBLIC_URL to be set for the http kick "
            "(it calls the app's own tick URL with a token signed with CRON_SECRET), got: "
            + ("no CRONTICK_PUBLIC_URL" if s.cron_secret else "no CRON_SECRET")
        )
    if s.github_oidc_repository and not s.github_oidc_audience:
        raise ConfigError(
            "CRONTICK_GITHUB_OIDC_AUDIENCE: expected the audience your workflow requests (e.g. your app's URL) "
            "because CRONTICK_GITHUB_OIDC_REPOSITORY is set, got: nothing"
        )
    wakeups.check(s)
    for channel in s.reminder_channels:  # rather than on the first send at 3 a.m.
        require_channel(s, channel)
    for name, role, value in (("CRONTICK_ADMIN_SECRET", "admin", s.admin_secret),
                              ("CRONTICK_ADMIN_VIEWER_SECRET", "viewer", s.admin_viewer_secret)):  # fmt: skip
        if value and role not in s.admin_roles:
            raise ConfigError(
                f"{name}: expected a secret of its own, got the value of CRON_SECRET "
                "(the scheduler sends that one with every call; it must never open the admin)"
            )
    if s.admin_secret and s.admin_secret == s.admin_viewer_secret:
        raise ConfigError(
            "CRONTICK_ADMIN_VIEWER_SECRET: expected a secret other than CRONTICK_ADMIN_SECRET, "
            "got the same value (the viewer would have the admin's role)"
        )


def require_channel(s: Settings, channel: str) -> None:
    """Raise ConfigError naming the first variable `channel` needs and is missing (the rows' needed_by)."""
    for name, _, row in _FIELD_ROWS:
        if channel in row.needed_by and not getattr(s, name):
            raise ConfigError(f"{row.name}: expected {row.needed_as} for the {channel} channel, got: nothing")
