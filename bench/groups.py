"""Where a grouped batch's time goes: the claim and the record step of batches of 100, over 1,000 groups and over none.

`python -m bench.groups --runs 3` (CRONTICK_BENCH_DATABASE_URL, or an embedded server) enqueues
10,000 no-op jobs, either spread over 1,000 groups in turn (as `make bench`'s groups drain does)
or without a group, then claims them 100 at a time with `crontick_job_claim_due` and records
each batch done with `crontick_job_record_outcomes`, timing each call on the wire. It prints the
median claim and record of each kind per run; run it from two checkouts in turn to compare a
change to the claim or record path (each run's grouped and ungrouped rows share the machine's
noise). The numbers in docs/benchmarks.md ("Flow control: the groups drain") came from it.
`--functions` also prints each crontick function's time per batch from pg_stat_user_functions
(`track_functions = all`, which needs a superuser, as the bench's server has): its own time, and
its total with the functions it calls (the record step's group settling is its own row).
`--compare DB1,DB2` runs the same loop, alternated, on databases migrated beforehand (by each
checkout in turn, or copies of the schema with an index changed), for docs/benchmarks.md's
"The admin's indexes".
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from contextlib import ExitStack
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from crontick import db

from . import server

JOBS = 10_000
GROUPS = 1_000
BATCH = 100
DATABASE = "crontick_bench_groups"

ENQUEUE = """
insert into crontick.jobs (type, payload, group_key)
select 'noop', jsonb_build_object('i', g), case when %(grouped)s then 'group:' || (g %% %(groups)s) end
from generate_series(0, %(n)s - 1) g order by g
"""
CLAIM = "select jobs from crontick.crontick_job_claim_due(null, %(limit)s, interval '30 seconds', null)"
RECORD = """select * from crontick.crontick_job_record_outcomes(now(), %(ids)s, %(attempts)s, '[]'::json, true, now(),
    'bench', '{}'::jsonb, '{}'::jsonb, null)"""


FUNCTIONS = """
select funcname, total_time, self_time from pg_stat_user_functions
where schemaname = 'crontick' and calls > 0 order by total_time desc
"""


def one_kind(url: str, grouped: bool, functions: bool = False) -> tuple[float, float, int]:
    """Median claim and record milliseconds, and the batches, draining one backlog."""
    claims: list[float] = []
    records: list[float] = []
    with psycopg.connect(url, autocommit=True) as conn:
        if functions:
            conn.execute("set track_functions = 'all'")
        conn.execute("truncate crontick.jobs")
        conn.execute(ENQUEUE, {"grouped": grouped, "groups": GROUPS, "n": JOBS})
        conn.execute("vacuum analyze crontick.jobs")
        if functions:  # the enqueue's trigger calls are flushed (once idle, before the next statement) and reset
            conn.execute("select pg_stat_force_next_flush()")
            conn.execute("select pg_stat_reset()")
        while True:
            began = time.perf_counter()
            row = conn.execute(CLAIM, {"limit": BATCH}).fetchone()
            claims.append(time.perf_counter() - began)
            batch: list[Any] = (row[0] if row else None) or []
            if not batch:
                break
            params = {"ids": [job[0] for job in batch], "attempts": [job[3] for job in batch]}
            began = time.perf_counter()
            conn.execute(RECORD, params)
            records.append(time.perf_counter() - began)
        left = conn.execute("select count(*) from crontick.jobs where status <> 'done'").fetchone()
        if functions:
            print_functions(conn, len(records))
    if left != (0,):
        raise RuntimeError(f"expected every job done, got {left} left")
    return statistics.median(claims) * 1000, statistics.median(records) * 1000, len(records)


def print_functions(conn: psycopg.Connection[Any], batches: int) -> None:
    """Each crontick function's own and total milliseconds per batch, as the server counted them."""
    conn.execute("select pg_stat_force_next_flush()")  # flushed once idle, before the next statement reads them
    for name, total, own in conn.execute(FUNCTIONS).fetchall():
        print(f"    {name:<40}{own / batches:8.2f} own{total / batches:8.2f} total")


def compare(names: list[str], runs: int) -> None:
    """Claim plus record per batch on databases migrated beforehand (by two checkouts, or copies of the
    schema with an index changed), in turn within each round and in a rotating order, so the machine's
    drift hits each alike. Prints each database's median over the rounds, then every round."""
    with ExitStack() as stack:
        admin = server.admin_url(stack)
        totals: dict[str, dict[bool, list[float]]] = {n: {False: [], True: []} for n in names}
        for run in range(runs):
            for grouped in (False, True):
                for name in names[run % len(names) :] + names[: run % len(names)]:
                    claim, record, _ = one_kind(make_conninfo(admin, dbname=name), grouped)
                    totals[name][grouped].append(claim + record)
    for name, kinds in totals.items():
        rounds = " ".join(f"{t:.2f}" for t in kinds[True])
        print(
            f"{name}: no groups {statistics.median(kinds[False]):.2f} ms, "
            f"1,000 groups {statistics.median(kinds[True]):.2f} ms (rounds: {rounds})"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--functions", action="store_true", help="also print each function's time per batch")
    p.add_argument("--compare", metavar="DB1,DB2", help="alternate the loop on these migrated databases instead")
    args = p.parse_args()
    if args.compare:
        compare(args.compare.split(","), args.runs)
        return
    with ExitStack() as stack:
        admin = server.admin_url(stack)
        url = server.fresh_database(admin, DATABASE)
        asyncio.run(db.migrate(url))
        print(f"per batch of {BATCH}, medians, ms   claim  record  batches")
        for run in range(1, args.runs + 1):
            for grouped in (False, True):
                claim, record, batches = one_kind(url, grouped, args.functions)
                kind = f"{GROUPS:,} groups" if grouped else "no groups"
                print(f"run {run}, {kind:<24}{claim:8.2f}{record:8.2f}{batches:9d}")
        server.drop_database(admin, DATABASE)


if __name__ == "__main__":
    main()
