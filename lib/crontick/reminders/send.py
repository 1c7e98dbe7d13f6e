"""Booking reminders: claim the due ones in one statement, send them concurrently, record every outcome in one."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psycopg
from psycopg.rows import kwargs_row

from crontick import logs, retry
from crontick.channels import registry, wire
from crontick.channels.message import Channel, Delivered, Message
from crontick.db import query, source
from crontick.errors import ConfigError, PermanentError
from crontick.reminders import templates
from crontick.reminders.window import ReminderCounts, reminder_windows
from crontick.settings import Settings, html
from crontick.text import describe, scrub, storable

STATUSES = ("sending", "sent", "failed", "unknown")
MAX_ATTEMPTS = retry.DEFAULT_MAX_ATTEMPTS
UTC_ZONE = ZoneInfo("UTC")
PROVIDER_ID_MAX_CHARS = 200  # of a provider's message id, stored as it came (Resend and Twilio ids are ~40)
# A send starts only with this much of the budget left (or its timeout, or half the budget, if less): providers
# answer in 0.2-1 s, and a send the budget cuts mid-call may have been delivered, so on a channel without an
# idempotency key it ends 'unknown', never resent. One not started is released to the next tick, no attempt spent.
SEND_START_SECONDS = 2.0


@dataclass(frozen=True)
class Claimed:
    """A reminder_sends row as the claim returns it, with its booking (read from the reminder source)."""

    id: int
    booking_id: str  # the source's id as text, whatever its type (migration 0016)
    kind: str
    channel: str
    status: str  # 'sending' to send now; 'unknown' or 'failed' when the claim settled an earlier attempt
    attempts: int
    max_attempts: int
    maybe_delivered: bool  # an earlier attempt ended ambiguously
    idempotency_key: str
    created_at: datetime
    customer_name: str | None
    email: str | None
    phone: str | None
    starts_at: datetime
    time_zone: str | None  # null means UTC
    language: str | None = None  # the source's optional `language` column (crontick.reminders.templates)
    source_row: Mapping[str, Any] | None = None  # every column of the source's row: the templates' own variables


@dataclass(frozen=True)
class Failure:
    """Why an attempt did not deliver: 'permanent' (never retried), 'definite' (nothing was delivered,
    retry later) or 'ambiguous' (it may have been delivered)."""

    kind: str
    error: str
    retry_after_seconds: float | None = None  # the provider's Retry-After on a 429 or 503


@dataclass(frozen=True)
class Outcome:
    id: int
    claimed_attempt: int
    status: str  # sent | failed | unknown | released (not started before the deadline)
    next_attempt_at: datetime | None = None
    last_error: str | None = None
    provider_message_id: str | None = None
    ambiguous: bool = False  # this attempt may have reached the customer


async def send_due(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    now: datetime,
    deadline: float,
    clock: Callable[[], float],
) -> ReminderCounts:
    """Send the reminders due at `now`, at most a batch, in exactly two statements whatever the batch."""
    began = clock()
    if deadline - began < start_floor(settings):
        return ReminderCounts(more=True)
    channels = {name: registry.channel(name, settings) for name in settings.reminder_channels}
    await check_template_columns(conn, settings)
    claimed, lost_race = await claim(conn, settings, now)
    to_send = [c for c in claimed if c.status == "sending"]
    outcomes = await send_all(to_send, channels, settings, now=now, deadline=deadline, clock=clock)
    written = await record(conn, outcomes, now + timedelta(seconds=clock() - began))
    more = lost_race or len(claimed) >= settings.batch_size or clock() >= deadline
    counts = _count(claimed, outcomes, written, more=more)
    fenced = [o.id for o in outcomes if o.id not in written]
    if fenced:
        logs.warning("reminders_fenced", reminder_send_ids=fenced)
    return counts


# (source, variables) pairs this process found to match: checked once, before the first claim that needs them.
_columns_checked: set[tuple[tuple[str, str], frozenset[str]]] = set()


async def check_template_columns(conn: psycopg.AsyncConnection[Any], settings: Settings) -> None:
    """ReminderSourceError (reminders stop, jobs run) when a template names a variable that is neither crontick's
    own nor a column of the source. Only templates that use the source's own columns pay for it, once a process."""
    names = templates.source_names(settings)
    key = (settings.reminder_source_parts, names)
    if not names or key in _columns_checked:
        return
    found = await source.problem(conn, settings.reminder_source_parts, names)
    if found is not None:
        raise found
    _columns_checked.add(key)


async def claim(conn: psycopg.AsyncConnection[Any], settings: Settings, now: datetime) -> tuple[list[Claimed], bool]:
    """Up to a batch of reminders, and whether another tick inserted a fresh one first (so more are due)."""
    params = {
        "now": now,
        "limit": settings.batch_size,
        "lease_until": now + timedelta(seconds=settings.lease_seconds),
        **reminder_windows(settings),
        # The widest window's end (the longest lead: leads come longest first), as an index range.
        "window_end": now + settings.reminder_leads[0][1],
        "channels": list(settings.reminder_channels),
        "idempotent": sorted(registry.idempotent_channels()),
        "by_email": registry.addressed_by("email"),
        "by_phone": registry.addressed_by("phone"),
        "max_attempts": MAX_ATTEMPTS,
    }
    cur = conn.cursor(row_factory=kwargs_row(_claimed))
    parts = settings.reminder_source_parts
    try:
        await cur.execute(query("reminder_claim_due", parts), params)
    except psycopg.Error as exc:  # a source that lacks a column or cannot be read: one line; reminders stop, jobs run
        await source.explain(conn, parts, settings.schema, exc)
        raise
    rows = await cur.fetchall()
    return _once_each(rows), None in rows


def _once_each(rows: Sequence[Claimed | None]) -> list[Claimed]:
    """The claimed reminders, each once: a source that repeats a booking's id (a view joining each of
    its contacts) gives its one claimed row once per repeat, and only the first, the earliest
    start, is sent. The repeat is logged, so the view can be mended."""
    claimed: dict[int, Claimed] = {}
    repeated: list[str] = []
    for c in rows:
        if c is None:
            continue
        if c.id in claimed:
            repeated.append(c.booking_id)
        else:
            claimed[c.id] = c
    if repeated:
        logs.warning("reminder_source_repeats_id", booking_ids=sorted(set(repeated)))
    return list(claimed.values())


_CLAIMED_FIELDS = frozenset(Claimed.__dataclass_fields__)


def _claimed(**row: Any) -> Claimed | None:
    """A claim's row (every reminder_sends column, then the booking's) as a Claimed; None for its row
    of nulls: a fresh reminder that another tick inserted first."""
    if row["id"] is None:
        return None
    language = (row.get("source_row") or {}).get("language")
    fields = {k: v for k, v in row.items() if k in _CLAIMED_FIELDS}
    return Claimed(**fields, language=None if language is None else str(language))


async def send_all(
    claimed: Sequence[Claimed],
    channels: Mapping[str, Channel],
    settings: Settings,
    *,
    now: datetime,
    deadline: float,
    clock: Callable[[], float],
    rand: Callable[[], float] = random.random,
) -> list[Outcome]:
    """Send each claimed reminder, `settings.concurrency` at a time; none starts with less than
    start_floor(settings) left before the deadline."""
    gate = asyncio.Semaphore(settings.concurrency)
    began = clock()
    floor = start_floor(settings)

    async def one(c: Claimed) -> Outcome:
        async with gate:
            remaining = deadline - clock()
            if remaining < floor:
                return Outcome(c.id, c.attempts, "released")
            result = await attempt(c, channels, settings, remaining)
        if isinstance(result, Delivered):
            # The id is the provider's text: made storable first, like every error.
            pid = result.provider_message_id
            stored_id = None if pid is None else storable(pid, PROVIDER_ID_MAX_CHARS)
            return Outcome(c.id, c.attempts, "sent", provider_message_id=stored_id)
        finished = now + timedelta(seconds=clock() - began)
        return decide(
            c, Failure(result.kind, scrub(result.error, settings.secrets), result.retry_after_seconds), finished, rand()
        )

    return list(await asyncio.gather(*(one(c) for c in claimed)))


def start_floor(settings: Settings) -> float:
    """What must be left of the tick's budget for a send to start (SEND_START_SECONDS)."""
    return min(SEND_START_SECONDS, settings.delivery_timeout_seconds, settings.time_budget_seconds / 2)


async def attempt(
    c: Claimed, channels: Mapping[str, Channel], settings: Settings, remaining: float
) -> Delivered | Failure:
    """Render and send one reminder, turning every way it can end into Delivered or a Failure."""
    try:
        # A retry keeps the channel of its first attempt, which may since have left the configuration.
        channel = channels.get(c.channel) or registry.channel(c.channel, settings)
        message = render(c, channel.name, settings)
    except ConfigError as exc:
        return Failure("permanent", f"booking {c.booking_id}: {exc}")
    except (KeyError, ValueError, IndexError) as exc:  # a template that Settings.from_env did not vet
        return Failure("permanent", f"RenderError: booking {c.booking_id}: {type(exc).__name__}: {exc}")
    timeout = min(settings.delivery_timeout_seconds, remaining)
    try:
        return await asyncio.wait_for(channel.send(message, timeout), remaining)
    except PermanentError as exc:
        return Failure("permanent", f"booking {c.booking_id}: {exc}")
    except wire.DeliveryFailed as exc:
        return Failure("definite", f"booking {c.booking_id}: {exc}", exc.retry_after_seconds)
    except TimeoutError:
        return Failure(
            "ambiguous", f"booking {c.booking_id}: {channel.name}: stopped mid-call at the tick's time budget"
        )
    except Exception as exc:  # DeliveryUnknown, or anything else once the request may have left  # noqa: BLE001
        return Failure("ambiguous", f"booking {c.booking_id}: {describe(exc)}")


def decide(c: Claimed, failure: Failure, finished: datetime, rand: float) -> Outcome:
    """What a failed attempt leads to (a pure function):

    - permanent: over at once;
    - definite (the provider refused, or no connection was made): retried with backoff;
    - ambiguous, on a channel whose idempotency key the provider honours: retried the same way;
    - ambiguous otherwise: 'unknown' at once and never resent.
    When it is over, it is 'failed' only if no attempt may have delivered it, else 'unknown'.
    """
    ambiguous = failure.kind == "ambiguous"
    if ambiguous and c.channel not in registry.idempotent_channels():
        error = f"{failure.error}; not resent: the {c.channel} channel has no idempotency key"
        return Outcome(c.id, c.attempts, "unknown", None, error, ambiguous=True)
    permanent = failure.kind == "permanent"
    decision = retry.after_failure(
        c.attempts, c.max_attempts, retry.DEFAULT_POLICY, finished, rand, permanent, failure.retry_after_seconds
    )
    if isinstance(decision, retry.RetryAt):
        return Outcome(c.id, c.attempts, "failed", decision.run_after, failure.error, ambiguous=ambiguous)
    final = "unknown" if ambiguous or c.maybe_delivered else "failed"
    return Outcome(c.id, c.attempts, final, None, failure.error, ambiguous=ambiguous)


async def record(conn: psycopg.AsyncConnection[Any], outcomes: Sequence[Outcome], now: datetime) -> set[int]:
    """Write every outcome in one statement; returns the ids written (the rest were fenced off)."""
    if not outcomes:
        return set()
    params = {
        "now": now,
        "ids": [o.id for o in outcomes],
        "claimed_attempts": [o.claimed_attempt for o in outcomes],
        "statuses": [o.status for o in outcomes],
        "next_attempt_ats": [o.next_attempt_at for o in outcomes],
        "errors": [o.last_error for o in outcomes],
        "provider_ids": [o.provider_message_id for o in outcomes],
        "ambiguous": [o.ambiguous for o in outcomes],
    }
    cur = await conn.execute(query("reminder_record_outcomes"), params)
    return {row[0] for row in await cur.fetchall()}


def render(c: Claimed, channel: str, settings: Settings) -> Message:
    """The message for one reminder, its time shown in the booking's own time zone.

    "today"/"tomorrow" count from the reminder's first claim (created_at), not from this attempt, so
    every retry sends the same bytes under the same idempotency key (Resend rejects a key reused
    with a different body).
    """
    template = templates.choose(c.kind, c.language, settings)
    own = template_variables(c, c.created_at, templates.words(template.language))
    variables = {**templates.column_values(c.source_row), **own}
    subject = template.subject.format(**variables)
    text = template.text.format(**variables)
    page = None if template.html is None else html.render(template.html, variables)
    address = registry.address(channel)
    to = {"email": c.email, "phone": c.phone}[address] if address else c.email or c.phone or c.customer_name
    data = {
        "type": "booking.reminder",
        "timestamp": c.created_at.isoformat(),
        "data": {
            "kind": c.kind,
            "idempotency_key": c.idempotency_key,
            "booking": {
                "id": c.booking_id,
                "customer_name": c.customer_name,
                "email": c.email,
                "phone": c.phone,
                "starts_at": own["starts_at_utc"],
                "starts_at_local": own["starts_at"],
                "time_zone": own["time_zone"],
                "language": c.language,
            },
            "message": {"subject": subject, "text": text},
        },
    }
    return Message(to=to or "", subject=subject, text=text, idempotency_key=c.idempotency_key, html=page, data=data)


def template_variables(
    c: Claimed, now: datetime, words: templates.ReminderWords = templates.WORDS[templates.ENGLISH]
) -> dict[str, str]:
    """Every variable a template may use (settings.REMINDER_TEMPLATE_VARIABLES, listed in the README),
    `{day}`, `{date}` and `{zone}` in the template's language (`words`)."""
    zone = booking_zone(c.booking_id, c.time_zone or "UTC")
    local = c.starts_at.astimezone(zone)
    days = (local.date() - now.astimezone(zone).date()).days
    name = (c.customer_name or "").strip()
    date = words.date.format(
        weekday=words.weekdays[local.weekday()], day=local.day, month=words.months[local.month - 1]
    )
    return {
        "customer_name": name,
        "first_name": name.split()[0] if name else "",
        "booking_id": str(c.booking_id),
        "kind": c.kind,
        "day": words.today if days <= 0 else words.tomorrow if days == 1 else words.in_days.format(n=days),
        "date": date,
        "time": f"{local:%H:%M}",
        "zone": zone_label(zone.key, words.zone),
        "time_zone": zone.key,
        "starts_at": local.isoformat(),
        "starts_at_utc": c.starts_at.astimezone(UTC_ZONE).isoformat(),
    }


def booking_zone(booking_id: str, name: str) -> ZoneInfo:
    """The booking's zone; an unknown name falls back to UTC with a log line, never an error."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        logs.warning("unknown_time_zone", booking_id=booking_id, time_zone=name, fallback="UTC")
        return UTC_ZONE


def zone_label(key: str, pattern: str = "{city} time") -> str:
    """'Europe/Amsterdam' -> 'Amsterdam time'; 'America/Argentina/Buenos_Aires' -> 'Buenos Aires time'; UTC stays."""
    if key in ("UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu", "Universal", "Etc/Universal"):
        return "UTC"
    return pattern.format(city=key.rsplit("/", 1)[-1].replace("_", " "))


def _count(claimed: Sequence[Claimed], outcomes: Sequence[Outcome], written: set[int], *, more: bool) -> ReminderCounts:
    statuses = [c.status for c in claimed if c.status != "sending"]  # settled by the claim itself
    for o in outcomes:
        if o.id in written:
            statuses.append("retried" if o.status == "failed" and o.next_attempt_at else o.status)
    return ReminderCounts(
        sent=statuses.count("sent"),
        failed=statuses.count("failed"),
        unknown=statuses.count("unknown"),
        retried=statuses.count("retried"),
        more=more or "released" in statuses,
    )
