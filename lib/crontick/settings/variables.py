"""The configuration table's row type, and how a row's text from the environment becomes its value."""

from __future__ import annotations

import base64
import binascii
import math
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import field
from datetime import timedelta
from typing import Any, TypeVar
from urllib.parse import urlsplit

from crontick.errors import ConfigError, DatabaseUrlError

MIN_SECRET_CHARS = 32
DEFAULT_BATCH_SIZE = 100
DEFAULT_TIME_BUDGET_SECONDS = 8.0
LEASE_MARGIN_SECONDS = 30.0
# CRONTICK_SLOW_JOB_SECONDS' default, as a share of the time budget: the slow_job warning comes well before the cut.
SLOW_JOB_SHARE_OF_BUDGET = 0.5
DEFAULT_CONCURRENCY = 10
DEFAULT_OIDC_ISSUER = "https://token.actions.githubusercontent.com"
REMINDER_CHANNELS = ("console", "email", "smtp", "django", "sms", "whatsapp", "webhook")
# The name of a channel an app registers (crontick.reminder_channel); the same rule as reminder_sends'
# check constraint reminder_sends_channel_valid (sql/migrations/0037_reminder_channel_names.sql).
CHANNEL_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
DEFAULT_DELIVERY_TIMEOUT_SECONDS = 10.0
# crontick's own variables of a reminder template (crontick.reminders.send renders them; docs/reminders.md lists
# them). A template may also use every column of the reminder source by its name (checked against the source by
# `crontick migrate` and the first tick: crontick.db.source.problem).
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
DEFAULT_REMINDER_TEMPLATE = "Hi {first_name}, a reminder: your appointment is {day}, {date} at {time} ({zone})."
# Security hardening (issue 10): upper bounds, so a typo cannot make a tick claim a million rows or run for hours.
MAX_BATCH_SIZE = 10_000
MAX_TIME_BUDGET_SECONDS = 900.0  # 15 minutes: AWS Lambda's limit, and more than Vercel's default
MAX_CONCURRENCY = 256
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
MIN_MAX_BODY_BYTES = 1024
MAX_MAX_BODY_BYTES = 64 * 1024 * 1024
DEFAULT_SCHEDULE_GRACE_SECONDS = 900.0  # schedules: catch_up="skip" runs a slot at most this late
# Health, alerts and retention: a tick is expected this often; finished jobs are kept this long.
DEFAULT_EXPECTED_INTERVAL_SECONDS = 900.0
DEFAULT_KEEP_DONE_DAYS = 7.0
DEFAULT_KEEP_FAILED_DAYS = 30.0
# Prompt start (crontick.hooks.kick): the kick modes; the default is chosen per host (Settings.kick).
KICK_MODES = ("off", "inline", "http")
_KIND = re.compile(r"^([1-9][0-9]*)([mhd])$")
_KIND_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400}

DEFAULT_SCHEMA = "crontick"
# A plain lower-case identifier, as a person types it in psql unquoted, and never a system schema.
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

# The headings of the configuration page, in its order.
CORE = "Core"
SCHEDULES = "Recurring jobs"
REMINDERS = "Reminders"
SCHEDULER_AUTH = "Scheduler authentication"
ADMIN = "Admin"
HOOKS = "Inbound webhooks and prompt start"
MONITORING = "Monitoring"
WAKEUPS = "Precise wake-ups"
GROUPS = (CORE, SCHEDULES, REMINDERS, SCHEDULER_AUTH, ADMIN, HOOKS, MONITORING, WAKEUPS)

# The key of a Settings field's metadata that holds its row.
ROW = "crontick.variable"
T = TypeVar("T")


class Variable:
    """One row of the configuration table: an environment variable, its default, bounds and doc line.

    `minimum`/`maximum` bound a number's value and a text's length. `check` validates (and may
    normalise) a value once parsed, naming the variable in its ConfigError. `derive` gives the
    default when the variable is unset, from the environment and the values read before it.
    `shown` is the default as the docs print it, when the plain value would mislead. `needed_by`
    lists the reminder channels that cannot send without it, `needed_as` what to put there.
    `read_by` names the module that reads a variable that fills no Settings field. A plain class
    with slots, not a dataclass: the table is built on every cold start, and generating a
    dataclass's methods (or a NamedTuple's) would cost that start more than the rows themselves.
    """

    __slots__ = ("name", "group", "doc", "default", "minimum", "maximum", "secret", "check", "derive", "shown",
                 "needed_by", "needed_as", "read_by")  # fmt: skip

    def __init__(
        self,
        name: str,
        group: str,
        doc: str,
        default: Any = None,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        secret: bool = False,
        check: Callable[[Variable, Any], Any] | None = None,
        derive: Callable[[Mapping[str, str], Mapping[str, Any]], Any] | None = None,
        shown: str | None = None,
        needed_by: tuple[str, ...] = (),
        needed_as: str = "",
        read_by: str = "crontick.settings",
    ) -> None:
        self.name, self.group, self.doc, self.default = name, group, doc, default
        self.minimum, self.maximum, self.secret, self.check, self.derive = minimum, maximum, secret, check, derive
        self.shown, self.needed_by, self.needed_as, self.read_by = shown, needed_by, needed_as, read_by

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, {self.group!r})"


# The rows of variables read outside Settings (by the module each names), documented in the same table.
ELSEWHERE = (
    Variable("HOST", CORE, "`crontick serve`'s default `--host`.", shown="`0.0.0.0`", read_by="crontick.cli.main"),
    Variable(
        "PORT",
        CORE,
        "`crontick serve`'s default `--port` (Cloud Run, Fly and Render set it).",
        shown="`8000`",
        read_by="crontick.cli.main",
    ),
    Variable(
        "AWS_LAMBDA_FUNCTION_NAME",
        HOOKS,
        "Set by AWS Lambda itself, never by you: when present, `CRONTICK_KICK` "
        "defaults to `http`, because Lambda freezes the process once the handler returns.",
    ),
    *(
        Variable(
            name,
            HOOKS,
            f"The signing secret of `{verify}` inbound hooks declared without `secret=` "
            "(see [Inbound webhooks](inbound-webhooks.md)).",
            secret=True,
            read_by="crontick.hooks.inbound",
        )
        for name, verify in (("STRIPE_WEBHOOK_SECRET", "stripe"), ("GITHUB_WEBHOOK_SECRET", "github"))
    ),
    Variable(
        "CRONTICK_HOOK_<NAME>_SECRET",
        HOOKS,
        "The secret of the `standard` (`whsec_…`) or `bearer` (32+ "
        "characters) inbound hook named `<name>` (upper-cased, `-` as `_`), unless it is declared with "
        "`secret=`.",
        secret=True,
        read_by="crontick.hooks.inbound",
    ),
)


def setting(name: str, group: str, default: T, *, doc: str, secret: bool = False, **row: Any) -> T:
    """A Settings field filled from the variable `name`: the field's row of the table (see Variable)."""
    variable = Variable(name, group, doc, default, secret=secret, **row)
    return field(default=default, repr=not secret, metadata={ROW: variable})


def text(env: Mapping[str, str], name: str) -> str | None:
    """The variable's text, stripped; None when it is unset or blank."""
    value = env.get(name, "").strip()
    return value or None


def read(row: Variable, kind: str, env: Mapping[str, str], got: Mapping[str, Any]) -> Any:
    """The value of one row: its text parsed as `kind` (the field's annotation), else its default; then checked."""
    raw = text(env, row.name)
    if raw is None:
        value = row.derive(env, got) if row.derive is not None else row.default
    else:
        value = PARSERS[kind](row, raw)
    return value if value is None or row.check is None else row.check(row, value)


def _text(row: Variable, raw: str) -> str:
    if row.minimum is not None and len(raw) < row.minimum:
        hint = (
            " (generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')" if row.secret else ""
        )
        raise ConfigError(f"{row.name}: expected at least {row.minimum:g} characters, got: {len(raw)}{hint}")
    return raw


def _list(row: Variable, raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip()) or row.default


def _integer(row: Variable, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{row.name}: expected an integer, got: {raw!r}") from None
    _bounded(row, value, raw)
    return value


def _number(row: Variable, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{row.name}: expected a number, got: {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{row.name}: expected a finite number, got: {raw!r}")
    _bounded(row, value, raw)
    return value


def _bounded(row: Variable, value: float, raw: str) -> None:
    if row.minimum is not None and value < row.minimum:
        raise ConfigError(f"{row.name}: expected at least {row.minimum:g}, got: {raw!r}")
    if row.maximum is not None and value > row.maximum:
        plain = str(int(row.maximum)) if float(row.maximum).is_integer() else f"{row.maximum:g}"
        raise ConfigError(f"{row.name}: expected at most {plain}, got: {raw!r}")


def _flag(row: Variable, raw: str) -> bool:
    value = raw.lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{row.name}: expected 1 or 0, got: {value!r}")


# How a field's text is parsed, by the field's annotation.
PARSERS: dict[str, Callable[[Variable, str], Any]] = {
    "str | None": _text,
    "str": _text,
    "int": _integer,
    "float": _number,
    "bool": _flag,
    "tuple[str, ...]": _list,
}


# The checks rows name: each gets the row and a parsed value, and returns the value to keep.
def database_url(row: Variable, url: str) -> str:
    """DATABASE_URL, its syntax checked now (no connection is made) so a typo fails at startup."""
    import psycopg  # the app loads it anyway; importing settings alone does not
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise DatabaseUrlError(url, exc) from None  # not chained: psycopg's text may quote the password
    return url


def base_url(row: Variable, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
        raise ConfigError(f"{row.name}: expected the public base URL, such as https://app.example.com, got: {value!r}")
    # A path is kept as a prefix: an API Gateway stage (/prod) is in the URL callers use but not in the path the app sees.
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def http_url(row: Variable, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ConfigError(f"{row.name}: expected an http:// or https:// URL, got: {value!r}")
    return value


def alert_url(row: Variable, value: str) -> str:
    """CRONTICK_ALERT_WEBHOOK_URL; the message never repeats it (a Slack URL's path is a secret)."""
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ConfigError(
            f"{row.name}: expected an http:// or https:// URL such as https://hooks.slack.com/services/…, "
            f"got: a value starting {value[:8]!r}"
        )
    return value


def no_trailing_slash(row: Variable, value: str) -> str:
    return value.rstrip("/")


def signing_secret(row: Variable, value: str) -> str:
    try:
        webhook_signing_key(value)
    except ValueError as exc:
        raise ConfigError(f"{row.name}: {exc}") from None
    return value


def template(row: Variable, value: str) -> str:
    """A str.format template whose variables are plain names (no attribute access, no index): crontick's own
    (REMINDER_TEMPLATE_VARIABLES) or a column of the reminder source, which only the database can tell."""
    try:
        fields = [(f, spec or "") for _, f, spec, _ in string.Formatter().parse(value) if f is not None]
    except ValueError as exc:
        raise ConfigError(f"{row.name}: expected a template such as {row.default!r}, got: {value!r} ({exc})") from None
    for f, spec in fields:
        if not f.isidentifier() or "{" in spec:
            raise ConfigError(
                f"{row.name}: expected variables among {{{'}, {'.join(REMINDER_TEMPLATE_VARIABLES)}}} or a column of "
                f"the reminder source, by plain name (write {{{{ for a literal brace), got: {{{f}}}"
            )
    return value


def template_names(value: str) -> set[str]:
    """The variables a str.format template (already vetted by `template`) uses."""
    return {f for _, f, _, _ in string.Formatter().parse(value) if f}


def html_template(row: Variable, value: str) -> str:
    """A Jinja2 template that parses; its variables are checked like a text template's (by name, against the source)."""
    from crontick.settings import html

    try:
        html.names(value)
    except ValueError as exc:
        raise ConfigError(
            f"{row.name}: expected a Jinja2 template such as <p>Hi {{{{ first_name }}}}</p>, got: {exc}"
        ) from None
    return value


def channels(row: Variable, value: str) -> str:
    """Built-in channel names, or the names of channels an app registers (known only once its modules are imported:
    crontick.channels.registry.check_names refuses an unknown one at start-up)."""
    names = tuple(part.strip() for part in value.split(",") if part.strip()) or ("console",)
    for channel in names:
        if channel not in REMINDER_CHANNELS and not CHANNEL_NAME.fullmatch(channel):
            raise ConfigError(
                f"{row.name}: expected one of {', '.join(REMINDER_CHANNELS)}, the name of a channel your app registers "
                f"(a-z, 0-9, _ and -), or a fallback list such as email,sms, got: {channel!r}"
            )
    if len(set(names)) != len(names):
        raise ConfigError(f"{row.name}: expected each channel once, got: {','.join(names)!r}")
    return ",".join(names)


def reminder_kinds(row: Variable, kinds: tuple[str, ...]) -> tuple[str, ...]:
    """Fail at startup, naming the variable, rather than on the first send at 3 a.m."""
    try:
        leads = [kind_lead(kind) for kind in kinds]
    except ValueError as exc:
        raise ConfigError(f"{row.name}: {exc}") from None
    if len(set(leads)) != len(leads):
        raise ConfigError(f"{row.name}: expected kinds with different offsets, got: {','.join(kinds)!r}")
    return kinds


def kick_mode(row: Variable, value: str) -> str:
    value = value.lower()
    if value not in KICK_MODES:
        raise ConfigError(f"{row.name}: expected one of {', '.join(KICK_MODES)}, got: {value!r}")
    return value


def kind_lead(kind: str) -> timedelta:
    """'24h' -> 24 hours: a reminder kind names how long before the start it is due (m, h or d)."""
    match = _KIND.match(kind)
    if match is None:
        raise ValueError(f"expected a reminder kind such as 24h, 90m or 2d, got: {kind!r}")
    return timedelta(seconds=int(match.group(1)) * _KIND_UNIT_SECONDS[match.group(2)])


def webhook_signing_key(secret: str) -> bytes:
    """The HMAC key of a Standard Webhooks secret: base64 after an optional whsec_ prefix."""
    try:
        key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("expected whsec_ followed by base64, got: a value that does not decode") from None
    if len(key) < 16:
        raise ValueError(f"expected a key of at least 16 bytes, got: {len(key)}")
    return key


def schema_name(value: str) -> str:
    """CRONTICK_SCHEMA's value checked (the default when empty), else ConfigError saying what is expected."""
    name = value.strip() or DEFAULT_SCHEMA
    if not _SCHEMA_NAME.fullmatch(name) or name.startswith(("pg_", "information_schema")):
        raise ConfigError(
            "CRONTICK_SCHEMA: expected a lower-case schema name (a-z, 0-9, _; up to 63; not pg_* or "
            f"information_schema), got: {value!r}"
        )
    return name


def schema(row: Variable, value: str) -> str:
    """The `check` of CRONTICK_SCHEMA's row (and of a Settings built in code)."""
    return schema_name(value)
