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
from crontick.wakers import registry
from crontick.wakers.base import Provider, WakerError

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
# At most this many superseded bookings are cancelled by one tick's booking (each is one provider call, made
# alongside the booking's); any more are cancelled by the next bookings, or just arrive as empty ticks.
CANCEL_PER_TICK = 3


class Claim(NamedTuple):
    """crontick_wakeup_claim's row: which call this is (0: booked already), the instant's generation (its key), and
    the superseded bookings it cancelled: (instant, generation, message_id)."""

    attempt: int
    generation: int = 1
    superseded: tuple[tuple[datetime, int, str | None], ...] = ()


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
) -> WakeupOutcome:
    """Book this app's next tick at `next_due_at` through CRONTICK_WAKER's provider, once per instant. Never raises.

    The lead's tick duty calls it before the tick answers, after the tick's own work, with:
    - `conn`: the tick's connection, in autocommit mode (one statement when the instant is new or
      already booked, a second only when the provider call fails; no transaction is left open);
    - `next_due_at`: the earliest instant work comes due (the probe's next_due_at, after this tick's
      work), or None when nothing is due; a tick that answers `more: true` passes `now`, so its
      follow-up is booked at once;
    - `now`: the database's clock (the probe's `now`), which every instant is computed from;
    - `more`: the tick's answer, when known. `more=False` with `next_due_at` at or before `now` means
      work is held back (not due: a group's running job, a pause); it is booked HELD_BACK_RECHECK
      later, not at once. Better still, pass the instant it is released;
    - `delivered`: the instant of the wake-up whose delivery started this tick (None: another caller). It
      is recorded as served in the claim's statement. Arrived early (the provider's clock ahead of the
      database's: `delivered` after `now`), work still to come is booked that much later (up to
      EARLY_LEAD_MAX), so that the provider calls when it is due by the database's clock; without that, the
      instant it would book is the one that just came, booked already, and the work would wait for the
      safety net.
    The instant is `next_due_at` rounded up to the provider's granularity, at least its least lead
    after `now`, and at most its horizon after `now` (work beyond is booked at the horizon, where the
    next tick books again). crontick_wakeup_claim records it once across concurrent ticks; only the
    tick that claims it calls the provider, within CRONTICK_WAKEUP_TIMEOUT_SECONDS (twice that for
    the whole booking). A failure (4xx, 5xx, timeout, a database error) is logged as one JSON
    `wakeup_failed` event and recorded, and the next tick claims that instant again; a booking is
    logged as `wakeup_booked`. The outcome's `booked` and `failed` (0 or 1) are for the tick's summary;
    its `attempt` (2 or more: this instant failed before) is for an alert after repeated failures.
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
    instant = instant_for(provider, next_due_at, now)
    outcome = WakeupOutcome("booked", provider.name, instant)
    # Bookings before the work's due time are superseded (nothing is due before it, by the probe); none when the
    # work is held back or due now.
    cancel_before = next_due_at if next_due_at > now and hasattr(provider, "cancel") else None
    try:
        claim = await _claim(conn, provider, instant, delivered, now, cancel_before)
    except Exception as exc:
        return _failed(outcome._replace(status="failed", error=f"claim: {type(exc).__name__}: {exc}", retryable=True))
    if not claim.attempt:
        return outcome._replace(status="already")
    return await _call(conn, provider, settings, outcome._replace(attempt=claim.attempt), now, claim)


def _lead(provider: Provider, delivered: datetime, now: datetime) -> timedelta:
    """How far ahead of the database's clock the provider's runs, as a delivery that came early measured it; none
    beyond EARLY_LEAD_MAX (a clock to fix, not to follow, and logged as such)."""
    lead = delivered - now
    ok = lead <= EARLY_LEAD_MAX
    logs.info("wakeup_early", provider=provider.name, instant=delivered.isoformat(), lead_seconds=lead.total_seconds(),
              followed=ok)  # fmt: skip
    return lead if ok else timedelta(0)


async def _claim(
    conn: psycopg.AsyncConnection[Any],
    provider: Provider,
    instant: datetime,
    served: datetime | None,
    now: datetime,
    cancel_before: datetime | None,
) -> Claim:
    """Which call of the provider this is for `instant` (1 for a new one; 0 when it is booked already), and the
    bookings before `cancel_before` it supersedes, cancelled in the same statement. `served`: the delivered
    instant, recorded as served in the same statement."""
    params = {"instant": instant, "provider": provider.name, "served": served, "now": now,
              "cancel_before": cancel_before, "cancel_limit": CANCEL_PER_TICK if cancel_before else 0}  # fmt: skip
    cur = await conn.execute(query("wakeup_claim"), params)
    row = await cur.fetchone()
    if not row or not row[0]:
        return Claim(0)
    superseded = tuple(zip(row[2] or (), row[3] or (), row[4] or (), strict=True))
    return Claim(int(row[0]), int(row[1]), superseded)


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
    conn: psycopg.AsyncConnection[Any],
    provider: Provider,
    settings: Settings,
    outcome: WakeupOutcome,
    now: datetime,
    claim: Claim,
) -> WakeupOutcome:
    """The provider call of a claimed instant, alongside the cancels of the bookings it superseded (all within the
    one total timeout): on success nothing more (the claim said `booked`; a provider whose cancel needs the id it
    answered has it stored), on failure the error recorded, so the next tick claims the instant again."""
    instant = outcome.instant
    assert instant is not None
    deadline = asyncio.get_running_loop().time() + settings.wakeup_timeout_seconds * TOTAL_TIMEOUT_FACTOR
    cancels = [asyncio.ensure_future(_cancel(provider, settings, *s, deadline)) for s in claim.superseded]
    try:
        async with asyncio.timeout_at(deadline):
            booked = await provider.book(instant, booking_key(provider, settings, instant, claim.generation), now)
    except WakerError as exc:
        outcome = outcome._replace(status="failed", error=str(exc), retryable=exc.retryable)
    except TimeoutError:
        limit = settings.wakeup_timeout_seconds * TOTAL_TIMEOUT_FACTOR
        outcome = outcome._replace(status="failed", error=f"no booking within {limit:g} s", retryable=True)
    except Exception as exc:  # a provider's bug must not fail the tick
        outcome = outcome._replace(status="failed", error=f"{type(exc).__name__}: {exc}", retryable=False)
    else:
        outcome = outcome._replace(message_id=booked.message_id)
        logs.info("wakeup_booked", provider=provider.name, instant=instant.isoformat(),
                  message_id=booked.message_id, duplicate=booked.duplicate)  # fmt: skip
        await asyncio.gather(*cancels)
        if getattr(provider, "keeps_message_id", False) and booked.message_id is not None:
            try:
                await conn.execute(query("wakeup_message_id"), {"instant": instant, "message_id": booked.message_id})
            except Exception as exc:  # only its cancel is lost: its delivery arrives as an empty tick
                logs.warning("wakeup_record_failed", provider=provider.name, instant=instant.isoformat(),
                             detail=f"{type(exc).__name__}: {exc}")  # fmt: skip
        return outcome
    await asyncio.gather(*cancels)
    try:
        await conn.execute(query("wakeup_failed"), {"instant": instant, "error": outcome.error})
    except Exception as exc:
        logs.warning("wakeup_record_failed", provider=provider.name, instant=instant.isoformat(),
                     detail=f"{type(exc).__name__}: {exc}")  # fmt: skip
    return _failed(outcome)


async def _cancel(
    provider: Provider, settings: Settings, instant: datetime, generation: int, message_id: str | None, deadline: float
) -> None:
    """Delete one superseded booking at the provider by `deadline`. Never raises: a cancel that fails is logged
    (`wakeup_cancel_failed`), and its delivery arrives as an ordinary tick that finds nothing due."""
    key = booking_key(provider, settings, instant, generation)
    try:
        async with asyncio.timeout_at(deadline):
            await provider.cancel(key, message_id)  # type: ignore[attr-defined]
    except Exception as exc:
        detail = "no answer in time" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        logs.warning("wakeup_cancel_failed", provider=provider.name, instant=instant.isoformat(), detail=detail)
    else:
        logs.info("wakeup_cancelled", provider=provider.name, instant=instant.isoformat())


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
