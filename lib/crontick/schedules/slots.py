"""Pure slot math for schedules: which UTC instants a cron expression fires at, and what a catch-up policy does with them."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

POLICIES = ("latest", "all", "skip")
# `all` enqueues at most this many slots per tick, newest first; older ones are recorded as dropped.
ALL_CAP = 100
DEFAULT_GRACE_SECONDS = 900.0
# After this many slots in one window the rest are not walked one by one: the newest are found
# by restarting near the window's end, and the count of the skipped range becomes a lower bound.
# A `* * * * *` schedule after a 30-day sleep (43,200 slots) then costs ~700 steps, not 43,200.
SCAN_LIMIT = 500


class Skipped(NamedTuple):
    """A run of slots that were decided but not enqueued, recorded as one row."""

    reason: str  # coalesced | dropped_cap | skipped_late | paused
    first: datetime
    last: datetime
    slot_count: int
    count_is_lower_bound: bool = False


class Plan(NamedTuple):
    """What one evaluation of a schedule over (cursor, now] decided."""

    enqueue: list[datetime]  # newest first
    skipped: list[Skipped]
    next_at: datetime | None  # the first slot after `now` (None: the expression never fires again)


class Window(NamedTuple):
    first: datetime | None
    total: int  # exact unless count_is_lower_bound
    newest: list[datetime]  # the newest slots (up to ALL_CAP + 1), ascending
    after: datetime | None  # the first slot after the window
    count_is_lower_bound: bool


@lru_cache(maxsize=256)
def zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def check(cron: str, time_zone: str, catch_up: str) -> None:
    """Raise ValueError with an "expected …, got …" sentence when a definition cannot work."""
    if catch_up not in POLICIES:
        raise ValueError(f"expected catch_up to be one of {', '.join(POLICIES)}, got: {catch_up!r}")
    try:
        tz = zone(time_zone)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(f"expected an IANA time zone such as Europe/Amsterdam, got: {time_zone!r}") from None
    if not isinstance(cron, str):
        raise TypeError(f"expected a cron expression string such as '30 2 * * *', got: {cron!r}")
    try:
        CronSim(cron, datetime(2026, 1, 1, tzinfo=tz))
    except CronSimError as exc:
        raise ValueError(f"expected a 5-field cron expression such as '30 2 * * *', got: {cron!r} ({exc})") from None


def iter_slots(cron: str, time_zone: str, after: datetime) -> Iterator[datetime]:
    """Every slot strictly after `after`, ascending, as UTC instants (Debian cron's DST rule, via cronsim).

    The guard matters: started inside a repeated hour, cronsim can return an instant at or
    before its start (the first pass of a time that the start's wall clock has not reached).
    """
    last = after
    for local in CronSim(cron, after.astimezone(zone(time_zone))):
        at = local.astimezone(UTC)
        if at > last:
            last = at
            yield at


def slots_between(
    cron: str, time_zone: str, after: datetime, until: datetime, *, limit: int = 100_000
) -> list[datetime]:
    """The slots in (after, until], ascending; ValueError past `limit` (for the CLI's window)."""
    out: list[datetime] = []
    for at in iter_slots(cron, time_zone, after):
        if at > until:
            break
        if len(out) >= limit:
            raise ValueError(f"expected at most {limit} slots in the window, got more: use a shorter window")
        out.append(at)
    return out


def next_slot(cron: str, time_zone: str, after: datetime) -> datetime | None:
    return next(iter_slots(cron, time_zone, after), None)


def window(cron: str, time_zone: str, after: datetime, until: datetime, *, scan_limit: int = SCAN_LIMIT) -> Window:
    """The slots in (after, until], summarised: the first, how many, the newest ALL_CAP + 1, and the next one."""
    newest: deque[datetime] = deque(maxlen=ALL_CAP + 1)
    first: datetime | None = None
    count = 0
    for at in iter_slots(cron, time_zone, after):
        if at > until:
            return Window(first, count, list(newest), at, False)
        first = first or at
        count += 1
        newest.append(at)
        if count >= scan_limit:
            break
    else:
        return Window(first, count, list(newest), None, False)
    # Too many to walk: look again from close to `until`, widening until the newest are all found.
    span = max(newest[-1] - newest[0], timedelta(minutes=1))
    while True:
        start = max(until - 2 * span, newest[-1])
        tail: list[datetime] = []
        after_window: datetime | None = None
        for at in iter_slots(cron, time_zone, start):
            if at > until:
                after_window = at
                break
            tail.append(at)
        if len(tail) > ALL_CAP or start == newest[-1]:
            unwalked_gap = start > newest[-1]
            merged = (list(newest) + tail)[-(ALL_CAP + 1) :]
            return Window(first, count + len(tail), merged, after_window, unwalked_gap)
        span *= 2


def plan(
    cron: str,
    time_zone: str,
    catch_up: str,
    cursor: datetime,
    now: datetime,
    *,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    paused: bool = False,
) -> Plan:
    """Decide the slots in (cursor, now] under the policy: `latest` enqueues the newest, `all` the newest
    ALL_CAP (newest first), `skip` the newest only while it is less than `grace_seconds` old. Every slot
    not enqueued is in `skipped`, as at most one range per reason. A `paused` schedule enqueues none:
    all its slots are one range skipped as `paused`, and the policy applies again from the resume on."""
    w = window(cron, time_zone, cursor, now)
    if w.total == 0 or w.first is None:
        return Plan([], [], w.after)
    if paused:
        return Plan([], [Skipped("paused", w.first, w.newest[-1], w.total, w.count_is_lower_bound)], w.after)
    newest = w.newest[-1]
    lower = w.count_is_lower_bound
    if catch_up == "all":
        enqueue = w.newest[-ALL_CAP:][::-1]
        rest = w.total - len(enqueue)
        dropped = [Skipped("dropped_cap", w.first, w.newest[-len(enqueue) - 1], rest, lower)] if rest > 0 else []
        return Plan(enqueue, dropped, w.after)
    older = [Skipped("coalesced", w.first, w.newest[-2], w.total - 1, lower)] if w.total > 1 else []
    if catch_up == "skip" and now - newest >= timedelta(seconds=grace_seconds):
        return Plan([], [*older, Skipped("skipped_late", newest, newest, 1)], w.after)
    return Plan([newest], older, w.after)


def iso_z(at: datetime) -> str:
    """A UTC instant as ISO-8601 ending in Z (seconds precision, as cron slots have none finer)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
