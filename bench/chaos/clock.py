"""Chaos scenario 10: two servers whose host clocks are 10 minutes apart (faketime −5 min and +5 min) tick
one database in parallel. Nothing runs before it is due by the database's clock, and nothing runs twice."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack

import httpx

from bench import faketime as ft

from .drain import TICK, drain_all
from .rig import SECRET, Rig, Server
from .scenario import Row, Sizes

NAME = "10 clock skew"
SKEW_SECONDS = 300
BUDGET_SECONDS = 3.0
LEASE_SECONDS = 4.0
SLOW_SECONDS = 2.5  # a slow job works this long: its lease has 1.5 s left when it ends
CALLERS_PER_SERVER = 2
# Declared by the servers' handler module (clock_handlers), never imported here: a declaration would
# stay in the registry of the process that imports it (the test run).
SCHEDULE = "chaos-every-minute"
BACKDATE_SECONDS = 150  # the schedule's cursor is moved back this far: slots due at once, for both to race on

# The database's time of each reminder's claim, written by a trigger: independent of any tick's clock.
CLAIM_LOG_SQL = """
create table if not exists chaos_reminder_claims (
    booking_id text not null, kind text not null, claimed_at timestamptz not null default statement_timestamp());
create or replace function chaos_note_claim() returns trigger language plpgsql as $$
begin
    insert into chaos_reminder_claims (booking_id, kind) values (new.booking_id, new.kind);
    return new;
end $$;
drop trigger if exists chaos_note_claim on reminder_sends;
create trigger chaos_note_claim after insert on reminder_sends for each row execute function chaos_note_claim();
truncate chaos_reminder_claims;
"""
CLEAN_UP_SQL = """
drop trigger if exists chaos_note_claim on reminder_sends;
truncate crontick_schedule_slots, crontick_schedules, crontick_schedule_declared;
"""


def clock_skew(rig: Rig, sizes: Sizes) -> Row:
    """Jobs due over the next minutes, slow jobs near their lease, a `* * * * *` schedule declared by both
    servers, and reminders falling due, all ticked by two servers with skewed clocks."""
    faketime = ft.binary()
    if faketime is None:
        return Row(NAME, "not run", ft.MISSING, ok=not ft.required(), skipped=ft.MISSING)
    rig.sql(CLEAN_UP_SQL)
    rig.reset()
    rig.sql(CLAIM_LOG_SQL)
    window = sizes.skew_window_seconds
    jobs, slow, bookings = sizes.jobs // 10, max(4, sizes.jobs // 1000), max(10, sizes.bookings // 10)
    _seed(rig, jobs, bookings, window)
    env = {
        **ft.ENV,
        "CRONTICK_HANDLERS": "bench.chaos.clock_handlers",
        "CRONTICK_TIME_BUDGET_SECONDS": str(BUDGET_SECONDS),
        "CRONTICK_LEASE_SECONDS": str(LEASE_SECONDS),
    }
    rescued, ticks, errors = [0], [0], [0]
    try:
        with ExitStack() as stack:
            servers = [
                stack.enter_context(rig.serve(env, wrapper=ft.skewed([], offset, faketime)))
                for offset in (-SKEW_SECONDS, SKEW_SECONDS)
            ]
            with httpx.Client(timeout=60) as client:
                for server in servers:  # each syncs the schedule (it starts at the database's now: no backfill)
                    client.post(server.base + TICK, headers={"Authorization": f"Bearer {SECRET}"})
            cursor = rig.sql(
                "update crontick_schedules set evaluated_until = now() - make_interval(secs => %s), "
                "next_at = '-infinity' where name = %s returning evaluated_until",
                (BACKDATE_SECONDS, SCHEDULE),
            )[0][0]
            # Slow jobs due by both hosts' clocks, so either may claim one: a lease written by the slow
            # host's clock would look expired to the fast one, which would then run the job again.
            rig.sql(
                "insert into jobs (type, payload, run_after) select 'chaos.slow', "
                "jsonb_build_object('due', t, 'sleep', %(sleep)s::float8), t "
                "from (select now() - make_interval(secs => %(back)s) as t from generate_series(1, %(n)s)) s",
                {"n": slow, "sleep": SLOW_SECONDS, "back": SKEW_SECONDS + 60},
            )
            _tick_until(servers, time.monotonic() + window + LEASE_SECONDS, rescued, ticks, errors)
            for server in servers:  # what a last retry or release left pending
                drain_all(rig, server.base, 1, 60)
        return _verify(rig, sizes, jobs, slow, bookings, cursor, rescued[0], ticks[0], errors[0])
    finally:
        rig.sql(CLEAN_UP_SQL)


def _seed(rig: Rig, jobs: int, bookings: int, window: float) -> None:
    """Everything falls due over the window, by the database's clock; each job keeps its due time in its payload."""
    rig.sql(
        "insert into jobs (type, payload, run_after) select 'chaos.record', jsonb_build_object('due', t), t "
        "from (select now() + make_interval(secs => %(w)s * n / %(n)s) as t from generate_series(1, %(n)s) n) s",
        {"w": float(window), "n": jobs},
    )
    # A '24h' reminder is due 24 hours before its booking starts: these fall due over the window.
    rig.sql(
        "insert into bookings (customer_name, email, phone, starts_at) "
        "select 'Ada ' || n, 'ada' || n || '@example.com', '+3161234' || lpad(n::text, 4, '0'), "
        "now() + interval '24 hours' + make_interval(secs => %(w)s * n / %(n)s) from generate_series(1, %(n)s) n",
        {"w": float(window), "n": bookings},
    )


def _tick_until(servers: list[Server], stop_at: float, rescued: list[int], ticks: list[int], errors: list[int]) -> None:
    """Each server ticked by CALLERS_PER_SERVER threads, back to back, until stop_at."""
    lock = threading.Lock()

    def caller(base: str) -> None:
        with httpx.Client(timeout=60) as client:
            while time.monotonic() < stop_at:
                try:
                    r = client.post(base + TICK, headers={"Authorization": f"Bearer {SECRET}"})
                except httpx.TransportError:
                    with lock:
                        errors[0] += 1
                    continue
                with lock:
                    ticks[0] += 1
                    if r.status_code == 200:
                        rescued[0] += r.json()["jobs"]["rescued"]
                    else:
                        errors[0] += 1
                time.sleep(0.05)

    threads = [
        threading.Thread(target=caller, args=(server.base,)) for server in servers for _ in range(CALLERS_PER_SERVER)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _verify(
    rig: Rig, sizes: Sizes, jobs: int, slow: int, bookings: int, cursor: object, rescued: int, ticks: int, errors: int
) -> Row:
    # Seeded jobs: how often each ran, and whether its first run came before its due time (database clock).
    runs = rig.sql(
        "select j.type, count(s.job_id), coalesce(min(s.ran_at) < (j.payload ->> 'due')::timestamptz, false) "
        "from jobs j left join chaos_side_effects s on s.job_id = j.id where j.payload ? 'due' group by j.id"
    )
    lost = sum(1 for _, n, _ in runs if n == 0) + max(0, jobs + slow - len(runs))
    twice = sum(1 for _, n, _ in runs if n > 1)
    slow_twice = sum(1 for t, n, _ in runs if t == "chaos.slow" and n > 1)
    early = sum(1 for _, _, e in runs if e)
    pids = rig.sql("select pid, count(*) from chaos_side_effects group by pid order by pid")
    # Schedule slots: one job per slot, created (database clock) no earlier than the slot; none missed
    # between the backdated cursor and where the schedule's cursor ended.
    slots = rig.sql(
        "select j.scheduled_for, count(distinct j.id), min(j.created_at) < j.scheduled_for, count(s.job_id) "
        "from jobs j left join chaos_side_effects s on s.job_id = j.id where j.schedule = %s group by j.scheduled_for",
        (SCHEDULE,),
    )
    slot_dups = sum(1 for _, n, _, _ in slots if n > 1)
    slot_early = sum(1 for _, _, e, _ in slots if e)
    slot_runs_twice = sum(1 for _, n, _, r in slots if r > n)
    slot_unrun = sum(1 for _, n, _, r in slots if r < n)
    expected = rig.sql(
        "select count(*) from generate_series(date_trunc('minute', %s::timestamptz) + interval '1 minute', "
        "(select evaluated_until from crontick_schedules where name = %s), interval '1 minute')",
        (cursor, SCHEDULE),
    )[0][0]
    enqueued = sum(1 for at, _, _, _ in slots if at > cursor)
    slots_missed = max(0, expected - enqueued)
    # Reminders: counted at the provider; claimed (database clock) no earlier than 24 h before the start.
    ids = [row[0] for row in rig.sql("select id from bookings")]
    sends = rig.provider.sends
    unknown = rig.sql("select count(*) from reminder_sends where status = 'unknown'")[0][0]
    r_lost = sum(1 for b in ids if sends[b] == 0)
    r_twice = sum(1 for b in ids if sends[b] > 1)
    r_early = rig.sql(
        "select count(*) from chaos_reminder_claims c join bookings b on b.id::text = c.booking_id "
        "where c.claimed_at < b.starts_at - interval '24 hours'"
    )[0][0]
    lost_total = lost + slots_missed + slot_unrun + max(0, r_lost - unknown)
    duplicated = twice + slot_dups + slot_runs_twice + r_twice
    ok = not (lost_total or duplicated or early or slot_early or r_early or rescued or errors) and len(pids) == 2
    return Row(
        NAME,
        f"2 servers at -5 and +5 min (faketime), {ticks:,} ticks over {sizes.skew_window_seconds:.0f} s: "
        f"{jobs:,} jobs and {bookings} reminders falling due, {slow} slow jobs ({SLOW_SECONDS:g} s, lease "
        f"{LEASE_SECONDS:g} s), a * * * * * schedule in both",
        f"jobs: {len(runs) - lost - twice:,} ran once, {early} before due (DB clock), {twice} twice "
        f"(slow: {slow_twice}), {rescued} leases rescued, ran on {len(pids)} servers; slots: {len(slots)} "
        f"enqueued, {slot_dups} twice, {slot_early} early, {slots_missed} missed; reminders: "
        f"{sum(1 for b in ids if sends[b] == 1)} sent once, {r_early} early, {r_twice} twice; errors: {errors}",
        lost=lost_total,
        duplicated=duplicated,
        ok=ok,
    )
