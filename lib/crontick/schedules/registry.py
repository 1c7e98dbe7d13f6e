"""Recurring schedules: crontick.schedule() declarations, and the tick step that enqueues their due slots."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

import psycopg
from psycopg.types.json import Jsonb

from crontick import logs
from crontick.db import query
from crontick.errors import ConfigError
from crontick.settings import DEFAULT_SCHEDULE_GRACE_SECONDS
from crontick.text import json_problem, text_problem, type_problem

# crontick.schedules.slots (and cronsim, the cron parser under it) is imported where a schedule is declared
# or planned: a tick in a process that declares none never loads it.


class Schedule(NamedTuple):  # not a dataclass: every tick's cold start imports this module
    name: str
    cron: str
    job_type: str
    payload: Any
    time_zone: str
    catch_up: str

    def as_row(self) -> list[str]:
        return [self.name, self.cron, self.time_zone, self.catch_up, self.job_type]


class ScheduleCounts(NamedTuple):
    enqueued: int = 0
    skipped: int = 0  # slots decided but not enqueued (coalesced, dropped past the cap, too late)


_registry: dict[str, Schedule] = {}
# (database, digest of the declared set) pairs this process has synced: an unchanged set is
# not re-sent every tick. A tick that finds another digest stored forgets its pair, and syncs again.
_synced: set[tuple[tuple[bytes | None, ...], str]] = set()
# The declared set, sorted, and its digest: computed once per change of the registry, not on every
# tick (a process that declares 1,000 schedules would otherwise hash them all on each idle tick).
_snapshot: tuple[list[Schedule], str] | None = None


def schedule(
    name: str,
    cron: str,
    job_type: str,
    payload: Any = None,
    *,
    time_zone: str = "UTC",
    catch_up: str = "latest",
) -> Schedule:
    """Declare a recurring job: at each slot of `cron` (read on `time_zone`'s wall clock) a job of
    `job_type` with `payload` is enqueued, at most once per slot; `catch_up` says what happens to
    slots missed while no tick ran (`latest`, `all` or `skip`). Call it at import time of a module
    named in CRONTICK_HANDLERS. A bad definition raises ConfigError naming the schedule."""
    where = f"crontick.schedule({name!r})"
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ConfigError(f"crontick.schedule: expected a non-empty name of at most 200 characters, got: {name!r}")
    if problem := text_problem("a name", name, None):
        raise ConfigError(f"crontick.schedule: {problem}")
    if not isinstance(job_type, str) or not job_type:
        raise ConfigError(f"{where}: expected a non-empty job type, got: {job_type!r}")
    if problem := type_problem(job_type):
        raise ConfigError(f"{where}: {problem}")
    from crontick.schedules import slots

    try:
        slots.check(cron, time_zone, catch_up)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    try:
        text = json.dumps(payload, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: expected a JSON-serialisable payload, got one that is not ({exc})") from None
    if problem := json_problem(text):  # it would fail the statement that syncs every schedule, on every tick
        raise ConfigError(f"{where}: payload: {problem}")
    declared = Schedule(name, cron, job_type, {} if payload is None else payload, time_zone, catch_up)
    existing = _registry.get(name)
    if existing is not None and existing != declared:
        raise ConfigError(
            f"{where}: expected one definition per schedule name, got a second one "
            f"({cron!r} in {time_zone}; the first is {existing.cron!r} in {existing.time_zone})"
        )
    global _snapshot
    _registry[name] = declared
    _snapshot = None
    return declared


def declared() -> list[Schedule]:
    return [_registry[name] for name in sorted(_registry)]


def get(name: str) -> Schedule | None:
    return _registry.get(name)


def unregister(name: str) -> None:
    """Forget a declaration (tests, and apps that build schedules dynamically)."""
    global _snapshot
    _registry.pop(name, None)
    _snapshot = None


def digest(items: list[Schedule]) -> str:
    return hashlib.sha256(json.dumps([s.as_row() for s in items]).encode()).hexdigest()[:32]


def needs_sync(conn: psycopg.AsyncConnection[Any]) -> bool:
    """True while this process has declarations it has not yet sent to this database. An idle-tick
    probe that skips run_due when no schedule is due (`exists (select 1 from crontick_schedules
    where next_at <= now())`) must still call it while this is true, or new schedules never start."""
    items, mine = _declared_and_digest()
    return bool(items) and (_database(conn), mine) not in _synced


def _database(conn: psycopg.AsyncConnection[Any]) -> tuple[bytes | None, ...]:
    """Which database `conn` is on: host, port and name, read from libpq as they are (conn.info.dsn
    rebuilds the whole connection string, 0.16 ms, and this is asked on every tick)."""
    pg = conn.pgconn
    return (pg.host, pg.port, pg.db)


def _declared_and_digest() -> tuple[list[Schedule], str]:
    global _snapshot
    if _snapshot is None:
        items = declared()
        _snapshot = (items, digest(items))
    return _snapshot


async def run_due(
    conn: psycopg.AsyncConnection[Any],
    *,
    grace_seconds: float = DEFAULT_SCHEDULE_GRACE_SECONDS,
    max_attempts: Callable[[str], int | None] = lambda type: None,
) -> ScheduleCounts:
    """Enqueue the due slots of every declared schedule (run_due_and_next, without the next time)."""
    counts, _next_at = await run_due_and_next(conn, grace_seconds=grace_seconds, max_attempts=max_attempts)
    return counts


async def run_due_and_next(
    conn: psycopg.AsyncConnection[Any],
    *,
    grace_seconds: float = DEFAULT_SCHEDULE_GRACE_SECONDS,
    max_attempts: Callable[[str], int | None] = lambda type: None,
) -> tuple[ScheduleCounts, datetime | None]:
    """Enqueue the due slots of every declared schedule: no statement when none is declared, one
    when none is due, two when some are, however many schedules and missed slots there are. Also
    when a schedule is next due after them (None: none is, or none is declared), read by the same
    statements: a waker books it.

    "Now" is the database's clock, read by the first statement: a tick whose own clock is behind
    or ahead changes nothing about which slots are due. `max_attempts(type)`: what a slot's job of
    that type gets (the tick passes the handler's `max_attempts=`; None: the default).
    """
    items, mine = _declared_and_digest()
    if not items:
        return ScheduleCounts(), None
    key = (_database(conn), mine)
    send = key not in _synced
    params = {"declared": Jsonb([s.as_row() for s in items]) if send else None, "digest": mine}
    cur = await conn.execute(query("schedule_due"), params)
    row = await cur.fetchone()
    assert row is not None  # the statement always returns its one row
    now, stored, dormant, due, next_at = row
    if send:
        _synced.add(key)
        logs.info("schedules_synced", count=len(items), dormant=dormant)
    elif stored != mine:
        _synced.discard(key)  # another process synced another set (a deploy in progress): sync ours next tick
    plans = [p for p in (_plan(entry, now, grace_seconds, max_attempts) for entry in due) if p is not None]
    if not plans:
        return ScheduleCounts(), next_at
    cur = await conn.execute(query("schedule_apply"), {"plans": Jsonb(plans)})
    counts = await cur.fetchone()
    assert counts is not None
    enqueued, skipped, advanced, next_at = counts
    if advanced < len(plans):
        logs.info("schedules_raced", evaluated=len(plans), advanced=advanced)  # another tick decided them first
    return ScheduleCounts(enqueued, int(skipped)), next_at


def _plan(
    entry: list[Any], now: datetime, grace_seconds: float, max_attempts: Callable[[str], int | None] = lambda type: None
) -> list[Any] | None:
    """The JSON row schedule_apply takes for one due schedule, or None when this process does not declare it so."""
    name, cron, time_zone, cursor_text = entry[:4]
    paused = bool(entry[4]) if len(entry) > 4 else False  # a crontick_pauses row (the admin's Pause)
    s = _registry.get(name)
    if s is None or (s.cron, s.time_zone) != (cron, time_zone):
        return None  # declared by another version of the app; that version's ticks decide it
    from cronsim import CronSimError

    from crontick.schedules import slots

    cursor = datetime.fromisoformat(cursor_text)
    try:
        p = slots.plan(s.cron, s.time_zone, s.catch_up, cursor, now, grace_seconds=grace_seconds, paused=paused)
    except (CronSimError, ValueError, OverflowError) as exc:  # checked at load, so a bug: never fail the tick for it
        logs.error("schedule_failed", schedule=name, error=f"{type(exc).__name__}: {exc}")
        return None
    return [
        name,
        cron,
        time_zone,
        cursor_text,
        now.isoformat(),
        p.next_at and p.next_at.isoformat(),
        s.job_type,
        s.payload,
        [at.isoformat() for at in p.enqueue],
        [[k.reason, k.first.isoformat(), k.last.isoformat(), k.slot_count, k.count_is_lower_bound] for k in p.skipped],
        paused,  # schedule_apply applies the plan only if the pause is still as it was read
        max_attempts(s.job_type),  # the slot's job's max_attempts (None: the default)
    ]
