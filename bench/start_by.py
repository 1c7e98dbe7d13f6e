"""What start_by costs the claim (sql/functions/job_claim_due.sql, its `expire` part): its plan and buffers from
EXPLAIN (ANALYZE, BUFFERS) of the claim's own statement (bench.explain), on a queue of 10,000 due jobs without a
start_by, then with 1,000 more past theirs.

`python -m bench.start_by --url postgresql://…/db` on a database `crontick migrate` made (rolled back: it leaves
the database as it found it, but for the 11,000 jobs it adds, which it deletes).
"""

from __future__ import annotations

import argparse
import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from crontick import db

from . import explain as explain_nested

PENDING = 10_000
EXPIRED = 1_000
BATCH = 100
EXPIRE_PART = re.compile(r"^\s+CTE expire$.*?(?=^\s+CTE (?!expire))", re.MULTILINE | re.DOTALL)


async def claim_plan(conn: psycopg.AsyncConnection[Any]) -> tuple[str, str]:
    """The expire part's scan of jobs_start_by, and the claim statement's total time and buffers."""
    params = {"now": datetime.now(UTC), "limit": BATCH, "lease": timedelta(seconds=30), "flow": None}
    plans = await explain_nested.nested_plans(conn, db.query("job_claim_due"), params)
    claim = next(p for p in plans if "expire as materialized" in p)
    part = EXPIRE_PART.search(claim)
    total = re.search(r"duration: [\d.]+ ms", claim)
    plan = claim[claim.index("\n", claim.index("Query Text")) :]
    top_buffers = re.search(r"Buffers: .*", plan[plan.index("(actual") :])
    return (part.group(0).rstrip() if part else "(no expire part in the plan)"), " ".join(
        m.group(0) for m in (total, top_buffers) if m
    )


async def main(url: str) -> None:
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        await conn.execute(
            "insert into crontick.jobs (type, payload) select 'bench_start_by', '{}' from generate_series(1, %(n)s)",
            {"n": PENDING},
        )
        await conn.execute("analyze crontick.jobs")
        for label in (f"{PENDING:,} due jobs, none with a start_by", f"and {EXPIRED:,} past their start_by"):
            if label.startswith("and"):
                await conn.execute(
                    "insert into crontick.jobs (type, payload, start_by, run_after) select 'bench_start_by', '{}',"
                    " now() - interval '1 minute', now() - interval '2 minutes' from generate_series(1, %(n)s)",
                    {"n": EXPIRED},
                )
                await conn.execute("analyze crontick.jobs")
            scan, total = await claim_plan(conn)
            print(f"## {label}\n{scan}\nclaim statement: {total}\n")
    finally:
        await conn.execute("delete from crontick.jobs where type = 'bench_start_by'")
        await conn.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    asyncio.run(main(parser.parse_args().url))
