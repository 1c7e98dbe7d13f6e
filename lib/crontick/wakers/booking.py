"""book_next: what a tick calls to book its own next call at the instant work comes due (see its docstring)."""

from __future__ import annotations

import asyncio
import hashlib
import math
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from crontick import logs
from crontick.db import query
from crontick.settings import Settings
from crontick.wakers import ledger, registry
from crontick.wakers.base import Provider, WakerError
from crontick.wakers.ledger import Entry, Ledger, Plan

if TYPE_CHECKING:
    import psycopg

# The whole booking (an access token and the call) may take at most this many times the call's timeout.
TOTAL_TIMEOUT_FACTOR = 2.0
# Work already due that a tick left alone without `more` (held back: a group's running job, a pause) is
# looked at again this long after, not a second later, so held-back work cannot become a wake-up a second.
HELD_BACK_RECHECK = timedelta(minutes=1)
# Work beyond a provider's horizon is booked at the horizon rounded down to this many seconds (a multiple
# of every granularity), so the ticks of one hour find that instant booked instead of booking a new one each.
HORIZON_STEP_SECONDS = 3600
# A delivery that came early by at most this much (the provider's clock ahead of the database's) moves the next
# booking by as much; one earlier than that is logged and not followed.
EARLY_LEAD_MAX = timedelta(minutes=15)


class WakeupOutcome(NamedTuple):
    """What book_next did. `status`: `off` (no waker), `idle` (nothing due), `already` (this instant is booked),
    `booked` (the provider accepted it now) or `failed` (it did not; `error` says why). `booked` and `failed` are
    counts (0 or 1) for the tick's summary; `instant` is the instant booked or found booked."""

    status: str
    provider: str | None = None
    instant: datetime | None = None
    message_id: str | None = None
    error: str | None = None
    retryable: bool = False
    attempt: int = 0  # which call of the provider for this instant (2 and more: the earlier ones failed)
    duplicate: bool = False  # the provider answered that it held this key already

    @property
    def booked(self) -> int:
        return int(self.status == "booked")

    @property
    def failed(self) -> int:
        return int(self.status == "failed")


def instant_for(provider: Provider, next_due_at: datetime, now: datetime) -> datetime:
    """The instant to book: `next_due_at` rounded up to the provider's granularity, no sooner than its least
    lead time after `now`, and no later than its horizon after `now` (rounded down to the hour)."""
    step = provider.granularity_seconds
    earliest = max(next_due_at, now + provider.min_lead)
    up = math.ceil(earliest.timestamp() / step) * step
    latest = math.floor((now + provider.horizon).timestamp() / HORIZON_STEP_SECONDS) * HORIZON_STEP_SECONDS
    return datetime.fromtimestamp(min(up, latest), UTC)


def booking_key(provider: Provider, settings: Settings, instant: datetime, generation: int = 1) -> str:
    """The provider-side dedupe key of one instant: `crontick-<app>-<UTC instant>`, where <app> is a hash of
    the schema and what is called, so apps that share a provider account never share a key. An instant booked
    again after its booking was cancelled (generation 2 and on) is `crontick-<app>-g<generation>-<UTC instant>`:
    providers refuse or dedupe a reused key. At most 64 characters of [A-Za-z0-9-], which every provider takes as
    a name."""
    app = hashlib.sha256(f"{settings.schema}|{provider.name}|{provider.target}".encode()).hexdigest()[:12]
    again = f"g{generation}-" if generation >= 2 else ""
    return f"crontick-{app}-{again}{instant.strftime('%Y%m%dT%H%M%SZ')}"


async def book_next(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    next_due_at: datetime | None,
    now: datetime,
    *,
    more: bool | None = None,
    delivered: datetime | None = None,
    known: Ledger | None = None,
) -> WakeupOutcome:
    """Book this app's next tick at `next_due_at` through CRONTICK_WAKER's provider, once per instant. Never raises.

    The lead's tick duty calls it before the tick answers, after the tick's own work, with:
    - `conn`: the tick's connection, in autocommit mode (no transaction is left open);
    - `next_due_at`: the earliest instant work comes due (the probe's next_due_at, after this tick's
      work), or None when nothing is due; a tick that answers `more: true` passes `now`, so its
      follow-up is booked at once;
    - `now`: the database's clock (the probe's `now`), which every instant is computed from;
    - `more`: the tick's answer, when known. `more=False` with `next_due_at` at or before `now` means
      work is held back (not due: a group's running job, a pause); it is booked HELD_BACK_RECHECK
      later, not at once. Better still, pass the instant it is released;
    - `delivered`: the instant of the wake-up whose delivery started this tick (None: another caller). It
      is recorded as served in the booking's statement. Arrived early (the provider's clock ahead of the
      database's: `delivered` after `now`), work still to come is booked that much later (up to
      EARLY_LEAD_MAX), so that the provider calls when it is due by the database's clock; without that, the
      instant it would book is the one that just came, booked already, and the work would wait for the
      safety net;
    - `known`: the bookings the probe read (crontick.wakers.ledger); None: read here, one statement more.
    The instant is `next_due_at` rounded up to the provider's granularity, at least its least lead
    after `now`, and at most its horizon after `now` (work beyond is booked at the horizon, where the
    next tick books again). Booked already by `known`: no call, and no statement (unless a delivery is to be
    recorded as served). Else the provider is called first, within CRONTICK_WAKEUP_TIMEOUT_SECONDS (twice that for
    the whole booking), alongside the cancels of the bookings it supersedes, and then ONE statement,
    crontick_wakeup_claim, records the outcome: a booking costs a tick one statement and one call. Concurrent ticks
    that book the same instant call the provider under the same key, which it deduplicates; the statement of the
    later one finds the instant booked, and it counts `already`. A failure (4xx, 5xx, timeout) is logged as one
    JSON `wakeup_failed` event and recorded, and the next tick calls again; a booking is logged as
    `wakeup_booked`. The outcome's `booked` and `failed` (0 or 1) are for the tick's summary; its `attempt` (2 or
    more: this instant failed before) is for an alert after repeated failures.
    """
    if next_due_at is None:
        return WakeupOutcome("idle" if settings.waker != "none" else "off")
    try:
        provider = registry.provider_for(settings)
    except Exception as exc:  # a provider that cannot be built must not fail the tick either
        return _failed(WakeupOutcome("failed", settings.waker, error=f"{type(exc).__name__}: {exc}"))
    if provider is None:
        return WakeupOutcome("off")
    if more is False and next_due_at <= now:
        next_due_at = now + HELD_BACK_RECHECK
    if delivered is not None and delivered > now and next_due_at > now:
        next_due_at += _lead(provider, delivered, now)  # by the provider's clock, which the early delivery measured
    try:
        known = known if known is not None else (await ledger.read(conn))[1]
    except Exception as exc:
        outcome = WakeupOutcome("failed", provider.name, instant_for(provider, next_due_at, now), retryable=True)
        return _failed(outcome._replace(error=f"ledger: {type(exc).__name__}: {exc}"))
    outcome, needed_at, known = await _book(conn, provider, settings, next_due_at, now, known, delivered)
    if needed_at is None:
        return outcome
    # A booking this call cancelled was needed by work enqueued since the probe: booked again at once (no cancels).
    logs.warning("wakeup_cancel_raced", provider=provider.name, needed_at=needed_at.isoformat())
    again, _, _ = await _book(conn, provider, settings, needed_at, now, known, None, cancel=False)
    return again if again.failed else outcome


async def _book(
    conn: psycopg.AsyncConnection[Any],
    provider: Provider,
    settings: Settings,
    next_due_at: datetime,
    now: datetime,
    known: Ledger,
    delivered: datetime | None,
    *,
    cancel: bool = True,
) -> tuple[WakeupOutcome, datetime | None, Ledger]:
    """One booking of `next_due_at` as book_next describes it: the outcome, the instant to book again at once (see
    crontick_wakeup_claim's needed_at), and the bookings as this tick left them."""
    instant = instant_for(provider, next_due_at, now)
    outcome = WakeupOutcome("booked", provider.name, instant)
    plan = known.plan(instant)
    if not plan.call:
        if delivered is not None:
            await serve(conn, delivered)
        return outcome._replace(status="already"), None, known
    # Bookings before the work's due time are superseded (nothing is due before it, by the probe); none when the
    # work is held back or due now.
    superseded: tuple[Entry, ...] = ()
    if cancel and next_due_at > now and hasattr(provider, "cancel"):
        superseded = known.superseded(provider.name, now, min(next_due_at, instant), delivered)
    outcome = await _call(provider, settings, outcome._replace(attempt=plan.attempt), plan, superseded, now)
    return await _record(conn, outcome, plan, superseded, delivered, known)


def _lead(provider: Provider, delivered: datetime, now: datetime) -> timedelta:
    """How far ahead of the database's clock the provider's runs, as a delivery that came early measured it; none
    beyond EARLY_LEAD_MAX (a clock to fix, not to follow, and logged as such)."""
    lead = delivered - now
    ok = lead <= EARLY_LEAD_MAX
    logs.info("wakeup_early", provider=provider.name, instant=delivered.isoformat(), lead_seconds=lead.total_seconds(),
              followed=ok)  # fmt: skip
    return lead if ok else timedelta(0)


async def serve(conn: psycopg.AsyncConnection[Any], instant: datetime) -> None:
    """Record the delivered `instant` as served, for a delivered tick that books nothing. Never raises: a
    delivery not recorded is only not recognised as a duplicate later (its tick runs, and finds its work taken)."""
    try:
        await conn.execute(query("wakeup_served"), {"instant": instant})
    except Exception as exc:
        logs.warning("wakeup_record_failed", instant=instant.isoformat(), detail=f"{type(exc).__name__}: {exc}")


async def delivery_state(conn: psycopg.AsyncConnection[Any], instant: datetime) -> tuple[bool, datetime | None]:
    """Whether `instant` was booked here, and when it was served already (a delivery for it is then a duplicate).
    One statement; a database error goes on to the caller (the tick it precedes would meet it too)."""
    cur = await conn.execute(query("wakeup_served_at"), {"instant": instant})
    row = await cur.fetchone()
    return (row is not None, row[0] if row else None)


async def _call(
    provider: Provider,
    settings: Settings,
    outcome: WakeupOutcome,
    plan: Plan,
    superseded: tuple[Entry, ...],
    now: datetime,
) -> WakeupOutcome:
    """The provider call of `plan`, alongside the cancels of the bookings it supersedes (all within the one total
    timeout): the outcome, `booked` with the id the provider answered, or `failed` with the error. Nothing recorded."""
    instant = outcome.instant
    assert instant is not None
    deadline = asyncio.get_running_loop().time() + settings.wakeup_timeout_seconds * TOTAL_TIMEOUT_FACTOR
    cancels = [asyncio.ensure_future(_cancel(provider, settings, s, deadline)) for s in superseded]
    try:
        async with asyncio.timeout_at(deadline):
            booked = await provider.book(instant, booking_key(provider, settings, instant, plan.generation), now)
    except WakerError as exc:
        outcome = outcome._replace(status="failed", error=str(exc), retryable=exc.retryable)
    except TimeoutError:
        limit = settings.wakeup_timeout_seconds * TOTAL_TIMEOUT_FACTOR
        outcome = outcome._replace(status="failed", error=f"no booking within {limit:g} s", retryable=True)
    except Exception as exc:  # a provider's bug must not fail the tick
        outcome = outcome._replace(status="failed", error=f"{type(exc).__name__}: {exc}", retryable=False)
    else:
        outcome = outcome._replace(message_id=booked.message_id, duplicate=booked.duplicate)
    await asyncio.gather(*cancels)
    return outcome


async def _record(
    conn: psycopg.AsyncConnection[Any],
    outcome: WakeupOutcome,
    plan: Plan,
    superseded: tuple[Entry, ...],
    delivered: datetime | None,
    known: Ledger,
) -> tuple[WakeupOutcome, datetime | None, Ledger]:
    """The one statement after the call (crontick_wakeup_claim): its outcome, the delivered instant served and the
    cancelled bookings, recorded. A statement that fails loses only the record: a booking's delivery then comes as an
    instant not known here (an ordinary tick), and the next tick calls again under the same key."""
    instant = outcome.instant
    assert instant is not None
    params = {"instant": instant, "provider": outcome.provider, "generation": plan.generation,
              "attempt": plan.attempt, "message_id": outcome.message_id, "error": outcome.error, "served": delivered,
              "cancelled": [e.instant for e in superseded],
              "cancelled_generations": [e.generation for e in superseded]}  # fmt: skip
    try:
        cur = await conn.execute(query("wakeup_claim"), params)
        row = await cur.fetchone()
        assert row is not None  # one row always
    except Exception as exc:
        logs.warning("wakeup_record_failed", provider=outcome.provider, instant=instant.isoformat(),
                     detail=f"{type(exc).__name__}: {exc}")  # fmt: skip
        return (_failed(outcome) if outcome.failed else _logged(outcome)), None, known
    recorded, needed_at = bool(row[0]), row[1]
    changed = [e._replace(status="cancelled") for e in superseded]
    if not recorded:  # a concurrent tick booked this instant meanwhile: this call was its duplicate
        logs.info("wakeup_already", provider=outcome.provider, instant=instant.isoformat(), failed=bool(outcome.failed))
        outcome = outcome._replace(status="already", error=None)
    else:
        outcome = _failed(outcome) if outcome.failed else _logged(outcome)
    status = "failed" if outcome.failed else "booked"
    mine = Entry(instant, outcome.provider or "", status, plan.generation, plan.attempt, outcome.message_id)
    return outcome, needed_at, known.noted([*changed, mine])


async def _cancel(provider: Provider, settings: Settings, entry: Entry, deadline: float) -> None:
    """Delete one superseded booking at the provider by `deadline`. Never raises: a cancel that fails is logged
    (`wakeup_cancel_failed`), and its delivery arrives as an ordinary tick that finds nothing due."""
    key = booking_key(provider, settings, entry.instant, entry.generation)
    try:
        async with asyncio.timeout_at(deadline):
            await provider.cancel(key, entry.message_id)  # type: ignore[attr-defined]
    except Exception as exc:
        detail = "no answer in time" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        logs.warning("wakeup_cancel_failed", provider=provider.name, instant=entry.instant.isoformat(), detail=detail)
    else:
        logs.info("wakeup_cancelled", provider=provider.name, instant=entry.instant.isoformat())


def _logged(outcome: WakeupOutcome) -> WakeupOutcome:
    assert outcome.instant is not None
    logs.info("wakeup_booked", provider=outcome.provider, instant=outcome.instant.isoformat(),
              message_id=outcome.message_id, duplicate=outcome.duplicate)  # fmt: skip
    return outcome


def _failed(outcome: WakeupOutcome) -> WakeupOutcome:
    logs.warning(
        "wakeup_failed",
        provider=outcome.provider,
        instant=outcome.instant.isoformat() if outcome.instant else None,
        attempt=outcome.attempt,
        retryable=outcome.retryable,
        detail=outcome.error,
    )
    return outcome


class WakeupStatus(NamedTuple):
    """What health and the admin show: the next booked wake-up, the last failure, failures and bookings in a day."""

    next_booked_at: datetime | None
    last_failed_at: datetime | None
    last_error: str | None
    failed_last_day: int
    booked_last_day: int


async def status(conn: psycopg.AsyncConnection[Any], now: datetime | None = None) -> WakeupStatus:
    """The wake-ups' state from `now` on (default: the database's clock); one statement, no provider call."""
    cur = await conn.execute(query("wakeup_status"), {"now": now})
    row = await cur.fetchone()
    assert row is not None  # one row always
    return WakeupStatus(row[0], row[1], row[2], int(row[3]), int(row[4]))
