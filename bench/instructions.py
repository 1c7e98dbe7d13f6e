"""Instructions per batch of 100 on a PostgreSQL run under callgrind: a count that the machine's noise does not move.

Wall-clock figures on this machine drift by ±25 % from run to run; the instructions the server
executes for the same loop repeat within 1 %. Start a throwaway server under valgrind (as the
`postgres` user; fsync off, autovacuum off, so each run does the same work):

    initdb -D /tmp/vg/data -A trust -U postgres
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/tmp/vg/cg/cg.%p \\
        postgres -D /tmp/vg/data -p 5499 -k /tmp/vg -c fsync=off -c autovacuum=off

then migrate a database on it with each checkout and run
`python -m bench.instructions --port 5499 --databases a,b` (docs/benchmarks.md, "Ended jobs only
in jobs_status_updated"). Per database and kind it enqueues 10,000 no-op jobs (`raw`: the plain-SQL
reference loop of bench.systems on crontick's table; `plain`: crontick's claim and record
functions; `groups`: the same over 1,000 groups), drains them 100 at a time on a connection of its
own, closes it, and reads that backend's instruction total from its callgrind file. Two more
kinds count the claim alone, as `make bench`'s flow-claim target divides it (each batch recorded
on a second connection, whose instructions are not counted): `claim`, 60 claims of 100 from
10,000 ungrouped jobs, and `flow`, the same with a rate limit declared and 30,000 jobs in 10,000
groups (bench.scale's flow case).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import scale
from .groups import CLAIM, ENQUEUE, RECORD
from .systems import PLAIN_CLAIM, PLAIN_DONE_MANY

KINDS = ("raw", "plain", "groups")
CLAIM_KINDS = ("claim", "flow")
CLAIMS = 60
FLOW_CLAIM = "select jobs from crontick.crontick_job_claim_due(null, 100, interval '30 seconds', %(flow)s)"


def _instructions(out_dir: Path, pid: int) -> int:
    """The backend's total, written by callgrind when the backend exits."""
    path = out_dir / f"cg.{pid}"
    for _ in range(600):
        if path.exists():
            for line in path.read_text().splitlines():
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
        time.sleep(0.2)
    raise RuntimeError(f"expected callgrind's file {path}, got none")


def _drain(conn: psycopg.Connection[Any], kind: str) -> int:
    batches = 0
    while True:
        if kind == "raw":
            rows = conn.execute(PLAIN_CLAIM.replace("jobs", "crontick.jobs")).fetchall()
            if not rows:
                return batches
            conn.execute(PLAIN_DONE_MANY.replace("jobs", "crontick.jobs"), {"ids": [r[0] for r in rows]})
        else:
            row = conn.execute(CLAIM, {"limit": 100}).fetchone()
            batch: list[Any] = (row[0] if row else None) or []
            if not batch:
                return batches
            conn.execute(RECORD, {"ids": [j[0] for j in batch], "attempts": [j[3] for j in batch]})
        batches += 1


def claims_only(url: str, flow: bool, out_dir: Path) -> float:
    """Millions of instructions per claim of 100, plain or with flow control in use."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("truncate crontick.jobs cascade")
        conn.execute("set search_path to crontick")  # bench.scale's set-up names the table unqualified
        if flow:
            conn.execute(scale.INSERT_GROUPED, {"type": scale.JOB_TYPE, "n": 3 * scale.GROUPS, "groups": scale.GROUPS})
        else:
            conn.execute(scale.INSERT_DUE, {"type": scale.JOB_TYPE, "n": scale.DUE_JOBS})
        conn.execute("vacuum analyze jobs")
    with psycopg.connect(url, autocommit=True) as claimer, psycopg.connect(url, autocommit=True) as recorder:
        pid = claimer.info.backend_pid
        for _ in range(CLAIMS):
            row = claimer.execute(FLOW_CLAIM, {"flow": Jsonb(scale.FLOW) if flow else None}).fetchone()
            batch: list[Any] = (row[0] if row else None) or []
            if len(batch) != 100:
                raise RuntimeError(f"expected a claim of 100, got: {len(batch)}")
            recorder.execute(RECORD, {"ids": [j[0] for j in batch], "attempts": [j[3] for j in batch]})
    return _instructions(out_dir, pid) / CLAIMS / 1e6


def one(url: str, kind: str, out_dir: Path, jobs: int) -> float:
    """Millions of instructions per batch, draining `jobs` of `kind` (or per claim, for CLAIM_KINDS)."""
    if kind in CLAIM_KINDS:
        return claims_only(url, kind == "flow", out_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("truncate crontick.jobs cascade")
        conn.execute(ENQUEUE, {"grouped": kind == "groups", "groups": 1000, "n": jobs})
        conn.execute("vacuum analyze crontick.jobs")
    with psycopg.connect(url, autocommit=True) as conn:
        pid = conn.info.backend_pid
        batches = _drain(conn, kind)
    return _instructions(out_dir, pid) / batches / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=5499)
    p.add_argument("--databases", required=True, help="comma-separated, each migrated beforehand")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"of {', '.join(KINDS + CLAIM_KINDS)}")
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--out-dir", type=Path, default=Path("/tmp/vg/cg"), help="callgrind's output directory")
    args = p.parse_args()
    for kind in args.kinds.split(","):
        for name in args.databases.split(","):
            url = f"postgresql://postgres@127.0.0.1:{args.port}/{name}"
            print(
                f"{name:<16} {kind:<7} {one(url, kind, args.out_dir, args.jobs):8.2f} M instructions per batch",
                flush=True,
            )


if __name__ == "__main__":
    main()
