"""Reminders from a big table of your own: the probe and the reminder claim over a 1,000,000-row source (a view over
`public.appointments`, uuid ids, a status mapping), without and with an index on its starts_at.

    python -m bench.reminder_source [--rows 1000000] [--runs 9]

The rows span two years around now (about 1,370 a day, so about that many in the next 24 hours). Each
case times, as medians over `--runs` rolled-back runs: an idle tick's probe (nothing due: every booking in
the window already has its reminder) and the claim of a batch of 100 (none sent yet), then prints the claim's
and the probe's plans (EXPLAIN ANALYZE; the probe's from auto_explain, bench.explain). Uses
CRONTICK_BENCH_DATABASE_URL (else CRONTICK_TEST_DATABASE_URL). Not a timed test: figures for docs/reminders.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from crontick import db
from crontick.db.schema import source_label
from crontick.reminders.window import reminder_windows
from crontick.settings import Settings
from crontick.tick import duties, probe
from crontick.tick.duty import Tick
from crontick.tick.pacing import Pacing

from . import explain as explain_nested

SOURCE = ("public", "appointments_for_crontick")
# Bench set-up only: the rows are made in the server (a million round trips would time the loader).
LOAD = (
    """create table public.appointments (
        uid uuid primary key default gen_random_uuid(), client text not null, mail text, mobile text,
        begins timestamptz not null, tz text, state text not null default 'booked', lang text)""",
    """insert into public.appointments (client, mail, begins, tz, state, lang)
    select 'Client ' || g, 'c' || g || '@example.com', now() - interval '365 days' + g * (interval '730 days' / %(rows)s),
        'Europe/Amsterdam', case when g %% 10 = 0 then 'cancelled_by_client' else 'booked' end,
        (array['en', 'nl', 'es'])[1 + g %% 3]
    from generate_series(1, %(rows)s) g""",
    """create view public.appointments_for_crontick with (security_invoker = true) as
    select uid as id, client as customer_name, mail as email, mobile as phone, begins as starts_at, tz as time_zone,
        case state when 'booked' then 'confirmed' else 'cancelled' end as status, lang as language
    from public.appointments""",
)
INDEX = "create index appointments_begins on public.appointments (begins)"


@contextmanager
def database(admin_url: str) -> Iterator[str]:
    name = f"crontick_bench_source_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = make_conninfo(admin_url, dbname=name)
    try:
        yield url
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def settings(url: str) -> Settings:
    return Settings(database_url=url, reminder_source=source_label(SOURCE))


def claim_params(s: Settings, now: datetime) -> dict[str, Any]:
    """reminder_claim_due's parameters, as crontick.reminders.send.claim builds them."""
    from crontick.channels import registry
    from crontick.reminders.send import MAX_ATTEMPTS

    return {
        "now": now,
        "limit": s.batch_size,
        "lease_until": now + timedelta(seconds=s.lease_seconds),
        **reminder_windows(s),
        "window_end": now + s.reminder_leads[0][1],
        "channels": list(s.reminder_channels),
        "idempotent": sorted(registry.idempotent_channels()),
        "by_email": registry.addressed_by("email"),
        "by_phone": registry.addressed_by("phone"),
        "max_attempts": MAX_ATTEMPTS,
    }


def probe_params(s: Settings, now: datetime) -> dict[str, Any]:
    """tick_probe's parameters, as crontick.tick.probe.look builds them."""
    # No schedule is declared here, so the schedules duty asks without reading the connection.
    tick = Tick(None, s, Pacing(), time.perf_counter, float("inf"), now)  # type: ignore[arg-type]
    asks = duties.asks(tick, now)
    return {**probe.parameters(s, now, "bench", {}, asks), "reminder_source": source_label(SOURCE)}


async def timed(url: str, statement: str, params: dict[str, Any], runs: int) -> tuple[float, int]:
    """Median ms of `statement` in a rolled-back transaction (so every run claims the same rows), and its row count."""
    conn = await db.connect(url)
    try:
        times, rows = [], 0
        for _ in range(runs):
            async with conn.transaction(force_rollback=True):
                began = time.perf_counter()
                cur = await conn.execute(statement, params)
                rows = len(await cur.fetchall())
                times.append((time.perf_counter() - began) * 1000)
        return statistics.median(times), rows
    finally:
        await conn.close()


async def plans(url: str, s: Settings, now: datetime) -> tuple[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the claim, and the probe's own statement's plan (auto_explain)."""
    conn = await db.connect(url)
    try:
        statement = sql.SQL("explain (analyze, buffers) ") + sql.SQL(db.query("reminder_claim_due", SOURCE))  # type: ignore[arg-type,unused-ignore]
        async with conn.transaction(force_rollback=True):
            cur = await conn.execute(statement, claim_params(s, now))
            claim_plan = "\n".join(r[0] for r in await cur.fetchall())
        try:
            nested = await explain_nested.nested_plans(conn, db.query("tick_probe"), probe_params(s, now))
        except psycopg.Error as exc:
            nested = [f"(auto_explain unavailable: {type(exc).__name__})"]
        # The function's own statement (its `return query`) is the longest plan; the call's is last.
        return claim_plan, max(nested, key=len) if nested else "(no plan logged)"
    finally:
        await conn.close()


async def case(url: str, runs: int) -> dict[str, Any]:
    s = settings(url)
    now = datetime.now(UTC)
    claim_ms, claimed = await timed(url, db.query("reminder_claim_due", SOURCE), claim_params(s, now), runs)
    # An idle tick: every booking in the window has its reminder (sent by one real claim, kept).
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "insert into crontick.reminder_sends (booking_id, kind, channel, status, attempts, sent_at)"
            " select id::text, '24h', 'console', 'sent', 1, now() from public.appointments_for_crontick"
            " where status = 'confirmed' and starts_at > %(now)s and starts_at <= %(now)s + interval '24 hours'",
            {"now": now},
        )
        conn.execute("vacuum analyze crontick.reminder_sends")
    probe_ms, _ = await timed(url, db.query("tick_probe"), probe_params(s, now), runs)
    claim_plan, probe_plan = await plans(url, s, now)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("truncate crontick.reminder_sends")
    return {
        "claim_median_ms": round(claim_ms, 2),
        "claimed": claimed,
        "idle_probe_median_ms": round(probe_ms, 2),
        "claim_plan": claim_plan,
        "probe_plan": probe_plan,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=9)
    args = p.parse_args(argv)
    admin_url = os.environ.get("CRONTICK_BENCH_DATABASE_URL") or os.environ.get("CRONTICK_TEST_DATABASE_URL")
    if not admin_url:
        print("set CRONTICK_BENCH_DATABASE_URL (a server where databases may be created)", file=sys.stderr)
        return 2
    with database(admin_url) as url:
        began = time.perf_counter()
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in LOAD:
                conn.execute(statement, {"rows": args.rows})
            conn.execute("vacuum analyze public.appointments")
        asyncio.run(db.migrate(url, source=SOURCE))
        print(f"loaded {args.rows:,} appointments in {time.perf_counter() - began:.0f} s")
        results = {}
        for label in ("without an index on starts_at", "with an index on starts_at"):
            if label.startswith("with an"):
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(INDEX)
                    conn.execute("analyze public.appointments")
            results[label] = asyncio.run(case(url, args.runs))
        print(f"\n{'median ms (of ' + str(args.runs) + ')':<34} {'claim of 100':>13} {'idle probe':>11}")
        for label, r in results.items():
            print(
                f"{label:<34} {r['claim_median_ms']:>13.2f} {r['idle_probe_median_ms']:>11.2f}  ({r['claimed']} claimed)"
            )
        for label, r in results.items():
            print(f"\nEXPLAIN (ANALYZE, BUFFERS) of the claim, {label}:\n{r['claim_plan']}")
            print(f"\nThe probe's statement, {label}:\n{r['probe_plan']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
