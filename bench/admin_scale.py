"""The admin at scale: each API call (and page) on 1,000,000 done + 10,000 failed + 10,000 pending jobs vs an
empty database, as ratios; the EXPLAIN of the heaviest query; and what the admin's indexes cost the tick path.

    python -m bench.admin_scale [--done 1000000] [--runs 15]

Uses CRONTICK_BENCH_DATABASE_URL (else CRONTICK_TEST_DATABASE_URL) as a server where it may create and drop
databases. Not a timed test: it prints figures for the closing note.
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
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from crontick import db, enqueue_many
from crontick.admin.jobs import ERROR_WINDOW_JOBS, SEARCH_WINDOW_IDS
from crontick.jobs import queue
from crontick.jobs.job import Outcome
from crontick.settings import Settings
from crontick.tick.claim import claim_due
from crontick.tick.record import TickLog, record_batch

ADMIN_SECRET = "bench-admin-secret-" + "b" * 32
CRON_SECRET = "bench-cron-secret-" + "c" * 32
TYPES = 5
EMPTY_ROWS = 60

# Bench set-up only: rows made in the server (a million round trips would measure the loader).
LOAD = [
    """insert into jobs (type, payload, status, attempts, run_after, created_at, updated_at, finished_at)
       select 'bench.t' || (g %% %(types)s), jsonb_build_object('user_id', g, 'kind', 'done'), 'done', 1, t, t, t, t
       from generate_series(1, %(done)s) g, lateral (select now() - interval '6 days' + g * interval '0.5 seconds' as t) x""",
    """insert into jobs (type, payload, status, attempts, max_attempts, last_error, created_at, updated_at, finished_at)
       select 'bench.t' || (g %% %(types)s), jsonb_build_object('user_id', g, 'kind', 'failed'), 'failed', 4, 4,
              'ValueError: upstream said no' || repeat(' traceback line', 200), now(), now(), now()
       from generate_series(1, %(failed)s) g""",
    """insert into job_attempts (job_id, attempt, started_at, finished_at, outcome, error)
       select id, a, now(), now(), case when a = 4 then 'failed' else 'retried' end, left(last_error, 4096)
       from jobs, generate_series(1, 4) a where status = 'failed'""",
    """insert into jobs (type, payload, run_after)
       select 'bench.t' || (g %% %(types)s), jsonb_build_object('user_id', g, 'kind', 'pending'), now() + g * interval '1 second'
       from generate_series(1, %(pending)s) g""",
    """insert into crontick_ticks (started_at, finished_at, source, summary)
       select now() - g * interval '1 minute', now() - g * interval '1 minute' + interval '2 seconds', 'bench',
              jsonb_build_object('jobs', jsonb_build_object('succeeded', 90, 'failed', 1))
       from generate_series(1, 1440) g""",
    """insert into bookings (customer_name, email, starts_at)
       select 'Customer ' || g, 'c' || g || '@example.com', now() + g * interval '1 minute' from generate_series(1, 2000) g""",
    """insert into reminder_sends (booking_id, kind, channel, status, sent_at)
       select id, '24h', 'console', 'sent', now() from bookings""",
    # Issue 23: the per-type ring full (every minute of 25 hours, 4 shards, 5 duration buckets per
    # type, as a busy day leaves it) and a long audit log.
    """insert into crontick_type_minutes (type, slot, shard, bucket, minute, done, failed, retried)
       select 'bench.t' || t, (extract(epoch from m)::bigint / 60 %% 1500)::smallint, s, 10 + b, m, 60, 1, 2
       from generate_series(0, %(types)s - 1) t, generate_series(0, 3) s, generate_series(0, 4) b,
            generate_series(date_trunc('minute', now()) - interval '1499 minutes', date_trunc('minute', now()),
                            interval '1 minute') m""",
    """insert into admin_audit (at, role, action, detail, rows)
       select now() - g * interval '1 minute', 'admin', 'retry_job', jsonb_build_object('job_id', g), 1
       from generate_series(1, 20000) g""",
]

CALLS = [
    ("GET /api/admin/jobs", "/api/admin/jobs"),
    ("GET /api/admin/jobs?status=failed", "/api/admin/jobs?status=failed"),
    ("GET /api/admin/jobs?status=pending", "/api/admin/jobs?status=pending"),
    ("GET /api/admin/jobs?status=done&cursor=<mid>", "/api/admin/jobs?status=done&cursor={mid}"),
    ("GET /api/admin/jobs?type=bench.t3", "/api/admin/jobs?type=bench.t3"),
    ("GET /api/admin/jobs?type=bench.t3&status=failed", "/api/admin/jobs?type=bench.t3&status=failed"),
    ("GET /api/admin/jobs?payload={user_id: 7}", '/api/admin/jobs?payload={{"user_id":7}}'),
    ("GET /api/admin/jobs/{failed id}", "/api/admin/jobs/{failed}"),
    ("GET /api/admin/stats", "/api/admin/stats"),
    ("GET /api/admin/reminders", "/api/admin/reminders"),
    ("GET /api/admin/reminders/due", "/api/admin/reminders/due"),
    ("GET /api/admin/ticks", "/api/admin/ticks"),
    ("GET /api/admin/jobs?status=due", "/api/admin/jobs?status=due"),
    ("GET /api/admin/jobs?status=scheduled", "/api/admin/jobs?status=scheduled"),
    ("GET /api/admin/jobs?error=timeout (no match)", "/api/admin/jobs?error=timeout"),
    ("GET /api/admin/jobs?error=upstream", "/api/admin/jobs?error=upstream"),
    ("GET /api/admin/types", "/api/admin/types"),
    ("GET /api/admin/audit", "/api/admin/audit"),
]
PAGES = [
    "/admin",
    "/admin/jobs?status=failed",
    "/admin/jobs/{failed}",
    "/admin/reminders",
    "/admin/ticks",
    "/admin/overview",
    "/admin/jobs?status=scheduled",
    "/admin/jobs?error=timeout",
    "/admin/audit",
]
EXPLAINED: dict[str, dict[str, Any]] = {
    "admin_stats_counts": {"statuses": list(queue.STATUSES), "cap": 10_001},
    "admin_jobs_by_type": {"statuses": list(queue.STATUSES), "type": "bench.t3", "before_id": 2**63 - 1, "limit": 51},
    "admin_jobs_by_status": {"status": "done", "before_id": 2**63 - 1, "limit": 51},
    "admin_jobs_search": {
        "before_id": 2**63 - 1,
        "floor_id": 0,
        "payload": Jsonb({"user_id": 7}),
        "status": None,
        "type": None,
        "limit": 51,
    },
    "admin_stats_hourly": {},
    "admin_reminders_due": {"limit": 50},
    # Issue 23's.
    "admin_jobs_scheduled": {"before_id": 2**63 - 1, "limit": 51},
    "admin_jobs_due": {"before_id": 2**63 - 1, "limit": 51},
    "admin_jobs_error_search": {
        "before_id": 2**63 - 1,
        "window": ERROR_WINDOW_JOBS,
        "text": "timeout",
        "type": None,
        "limit": 51,
    },
    "admin_type_figures": {},
    "admin_type_pending": {"types": 200, "probe": 100},
    "admin_audit_page": {"before_id": 2**63 - 1, "limit": 51},
}


@contextmanager
def database(admin_url: str) -> Iterator[str]:
    name = f"crontick_bench_admin_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("alter database {} set search_path = crontick, public").format(sql.Identifier(name)))
    url = make_conninfo(admin_url, dbname=name)
    try:
        asyncio.run(db.migrate(url))
        yield url
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def load(url: str, done: int, failed: int, pending: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in LOAD:
            conn.execute(statement, {"done": done, "failed": failed, "pending": pending, "types": TYPES})
        conn.execute("vacuum analyze")


def ids(url: str) -> dict[str, str]:
    from crontick.admin.tx import encode_cursor

    with psycopg.connect(url, autocommit=True) as conn:
        failed = conn.execute("select max(id) from jobs where status = 'failed'").fetchone()
        mid = conn.execute("select percentile_disc(0.5) within group (order by id) from jobs").fetchone()
    return {"failed": str(failed[0] if failed else 1), "mid": encode_cursor(int(mid[0]) if mid and mid[0] else 1)}


def timed(client: httpx.Client, path: str, runs: int) -> float:
    client.get(path).raise_for_status()  # warm: connection, plan caches, templates
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        client.get(path).raise_for_status()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def measure(url: str, runs: int) -> dict[str, float]:
    from crontick.app import create_app
    from tests.support.servers import serve

    settings = Settings(database_url=url, cron_secret=CRON_SECRET, admin_secret=ADMIN_SECRET)
    known = ids(url)
    out: dict[str, float] = {}
    with serve(create_app(settings)) as base:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {ADMIN_SECRET}"}, timeout=30) as api:
            for label, path in CALLS:
                out[label] = timed(api, path.format(**known), runs)
        with httpx.Client(base_url=base, timeout=30, headers={"Origin": base, "Sec-Fetch-Site": "same-origin"}) as web:
            if web.post("/admin/login", data={"secret": ADMIN_SECRET}).status_code == 303:
                for path in PAGES:
                    try:
                        out["page " + path] = timed(web, path.format(**known), runs)
                    except httpx.HTTPStatusError as exc:
                        print(f"page {path}: skipped, it answered {exc.response.status_code}", file=sys.stderr)
    return out


def explain(url: str) -> tuple[dict[str, float], str, str]:
    """Each candidate's execution time on the full database; the plan of the slowest."""
    times, plans = {}, {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("set jit = off")  # as in admin_read_begin's transaction
        top = conn.execute(db.query("admin_jobs_next_id")).fetchone()
        before = int(top[0]) if top else 1
        # The first page of a payload search, as store.list_jobs runs it: one window below the newest id.
        EXPLAINED["admin_jobs_search"].update(before_id=before, floor_id=max(before - SEARCH_WINDOW_IDS, 0))
        for name, params in EXPLAINED.items():
            statement = sql.SQL("explain (analyze, buffers) ") + sql.SQL(db.query(name))  # type: ignore[arg-type,unused-ignore]
            rows = [r[0] for r in conn.execute(statement, params).fetchall()]
            plans[name] = "\n".join(rows)
            times[name] = float(rows[-1].split(":")[1].strip().split()[0])
    heaviest = max(times, key=times.__getitem__)
    return times, heaviest, plans[heaviest]


INDEXES = {
    # Migration 0023's: the ended, waiting and held rows by type and status, the startable pending ones by type.
    "jobs_type_status_id": "create index jobs_type_status_id on jobs (type, status, id)"
    " where status <> 'running' and (status <> 'pending' or held)",
    "jobs_pending_type_id": "create index jobs_pending_type_id on jobs (type, id) where status = 'pending' and not held",
    # Migration 0006's full indexes, shipped until 0023.
    "jobs_status_id": "create index jobs_status_id on jobs (status, id)",
    "jobs_type_status_id_0006": "create index jobs_type_status_id_0006 on jobs (type, status, id)",
    "jobs_payload_gin": "create index jobs_payload_gin on jobs using gin (payload jsonb_path_ops)",
}
VARIANTS = {
    "no admin indexes": set(),
    "admin indexes (shipped)": {"jobs_type_status_id", "jobs_pending_type_id"},
    "0006's full indexes (until 0023)": {"jobs_status_id", "jobs_type_status_id_0006"},
    "+ GIN payload (not shipped)": {"jobs_type_status_id", "jobs_pending_type_id", "jobs_payload_gin"},
}


def tick_path_cost(admin_url: str, jobs: int = 10_000, rounds: int = 7) -> dict[str, tuple[float, float]]:
    """Median ms to enqueue `jobs` (one statement) and to claim + record 100, on one database whose
    indexes are switched between the variants round-robin (so machine noise hits each alike): without
    the admin's list indexes, with them (as shipped), and with a GIN jsonb_path_ops index as well."""
    enq: dict[str, list[float]] = {v: [] for v in VARIANTS}
    cycle: dict[str, list[float]] = {v: [] for v in VARIANTS}
    with database(admin_url) as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "insert into jobs (type, payload, status) select 'b', jsonb_build_object('user_id', g), 'done'"
            " from generate_series(1, 200000) g"
        )
        conn.execute("vacuum analyze jobs")
        for r in range(rounds):
            for label, wanted in VARIANTS.items():
                for name, ddl in INDEXES.items():
                    exists = conn.execute("select to_regclass(%(n)s) is not null", {"n": name}).fetchone()
                    if name in wanted and not (exists and exists[0]):
                        conn.execute(ddl)  # type: ignore[arg-type,unused-ignore]
                    elif name not in wanted and exists and exists[0]:
                        conn.execute(sql.SQL("drop index {}").format(sql.Identifier(name)))
                began = time.perf_counter()
                with conn.transaction():
                    enqueue_many(conn, [("b", {"user_id": i, "round": r}) for i in range(jobs)])
                enq[label].append((time.perf_counter() - began) * 1000)
                cycle[label].append(asyncio.run(_claim_record(url)))
    return {v: (statistics.median(enq[v]), statistics.median(cycle[v])) for v in VARIANTS}


async def _claim_record(url: str) -> float:
    conn = await db.connect(url)
    try:
        times = []
        for _ in range(10):
            now = datetime.now(UTC)
            began = time.perf_counter()
            batch = await claim_due(conn, now, 100, 60)
            await record_batch(
                conn,
                [Outcome(j.id, j.attempt, "done", j.attempt) for j in batch],
                now,
                TickLog(now, "bench", {}, len(batch), 0),
            )
            times.append((time.perf_counter() - began) * 1000)
        return statistics.median(times)
    finally:
        await conn.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--done", type=int, default=1_000_000)
    p.add_argument("--failed", type=int, default=10_000)
    p.add_argument("--pending", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--skip-tick-path", action="store_true")
    args = p.parse_args(argv)
    admin_url = os.environ.get("CRONTICK_BENCH_DATABASE_URL") or os.environ.get("CRONTICK_TEST_DATABASE_URL")
    if not admin_url:
        print("set CRONTICK_BENCH_DATABASE_URL (a server where databases may be created)", file=sys.stderr)
        return 2
    with database(admin_url) as empty, database(admin_url) as full:
        # "Empty": the same shapes, a page or so of each (so each call renders as many rows), no history.
        load(empty, 0, EMPTY_ROWS, EMPTY_ROWS)
        began = time.perf_counter()
        load(full, args.done, args.failed, args.pending)
        print(
            f"loaded {args.done:,} done + {args.failed:,} failed + {args.pending:,} pending in "
            f"{time.perf_counter() - began:.0f} s\n"
        )
        small, big = measure(empty, args.runs), measure(full, args.runs)
        print(f"{'median ms (of ' + str(args.runs) + ')':<52} {'empty':>8} {'full':>8} {'ratio':>6}")
        for label in small.keys() & big.keys():
            print(f"{label:<52} {small[label]:>8.1f} {big[label]:>8.1f} {big[label] / small[label]:>6.2f}")
        times, heaviest, plan = explain(full)
        print("\nexecution time on the full database (EXPLAIN ANALYZE), ms:")
        for name, ms in sorted(times.items(), key=lambda kv: -kv[1]):
            print(f"  {name:<24} {ms:>8.3f}")
        print(f"\nEXPLAIN (ANALYZE, BUFFERS) of the heaviest, {heaviest}:\n{plan}\n")
    if not args.skip_tick_path:
        print("tick-path cost of the admin's indexes (200,000 done jobs in the table), median ms:")
        print(f"  {'variant':<30} {'enqueue 10,000':>15} {'claim+record 100':>17}")
        for label, (enq, cycle) in tick_path_cost(admin_url).items():
            print(f"  {label:<30} {enq:>15.1f} {cycle:>17.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
