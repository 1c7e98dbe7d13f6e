"""Durable steps against DBOS Transact: the same three-step no-op workflow drained by DBOS (a Queue in its own
process) and by crontick's drain (the loop `crontick tick --drain` runs), beside crontick's one-step drain, in one
run. `python -m bench.workflows [--jobs 5000] [--runs 1]` runs this part alone and writes its section of
bench/results/latest.json; `make bench` runs it with the rest."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from . import report, server
from .noop import JOB_TYPE, STEPS_JOB_TYPE, STEPS_SYNC_JOB_TYPE
from .seen import Seen, share
from .systems import _version, analyze, crontick_drain, crontick_enqueue, crontick_install

JOBS = 5_000
ONE_STEP = "crontick drain, one-step no-op jobs, batch 100"
THREE_STEPS = "crontick drain, three-step workflows, batch 100"
THREE_STEPS_SYNC = "crontick drain, three-step `def` workflows, batch 100"
GOAL_OVER_DBOS = 10.0
TARGET = "three-step workflows: crontick drain ÷ DBOS"


def _dbos(what: str, url: str, jobs: int, seen_file: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-m", "bench.dbos_peer", what, server.as_url(url), str(jobs), str(seen_file)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"bench.dbos_peer {what}: exit {out.returncode}: {out.stderr[-2000:]}")
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


async def _truncate(url: str) -> None:
    """Every run starts from an empty queue and no recorded steps."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("truncate crontick.jobs")  # a trigger empties job_steps with it


async def measure(admin: str, workdir: Path, jobs: int = JOBS, runs: int = 1) -> dict[str, Any]:
    """Each system `runs` times, interleaved; jobs per second (median) and whether each job ran once."""
    from .dbos_peer import POLLING_INTERVAL_SECONDS, WORKER_CONCURRENCY

    seen_file = workdir / "seen-workflows"
    seen = Seen(seen_file, jobs)
    # bench.noop in this process marks this file: in `make bench` the drains before had opened their own.
    share(seen)
    crontick_url = server.fresh_database(admin, "crontick_bench_steps")
    await crontick_install(crontick_url)
    dbos_name = f"DBOS Transact {_version('dbos')}, Queue worker_concurrency {WORKER_CONCURRENCY}, polling {POLLING_INTERVAL_SECONDS:g} s"
    raw: dict[str, dict[str, list[Any]]] = {
        n: {"drain": [], "problems": []} for n in (ONE_STEP, THREE_STEPS, THREE_STEPS_SYNC, dbos_name)
    }
    drain = crontick_drain(100)
    for _ in range(runs):
        crontick_rows = ((ONE_STEP, JOB_TYPE), (THREE_STEPS, STEPS_JOB_TYPE), (THREE_STEPS_SYNC, STEPS_SYNC_JOB_TYPE))
        for name, job_type in crontick_rows:
            await _truncate(crontick_url)
            seen.reset()
            await crontick_enqueue(crontick_url, jobs, seen, job_type)
            await analyze(crontick_url)
            raw[name]["drain"].append(await drain(crontick_url, jobs, seen))
            raw[name]["problems"].append(seen.check())
            print(f"{name}: {jobs / raw[name]['drain'][-1]:,.0f} jobs/s", file=sys.stderr, flush=True)
        dbos_url = server.fresh_database(admin, "crontick_bench_dbos")  # a fresh system database each run
        seen.reset()
        _dbos("enqueue", dbos_url, jobs, seen_file)
        await analyze(dbos_url)
        raw[dbos_name]["drain"].append(_dbos("drain", dbos_url, jobs, seen_file))
        raw[dbos_name]["problems"].append(seen.check())
        print(f"{dbos_name}: {jobs / raw[dbos_name]['drain'][-1]:,.0f} workflows/s", file=sys.stderr, flush=True)
    rows = {}
    for name, entry in raw.items():
        seconds = statistics.median(entry["drain"])
        rows[name] = {
            "system": name,
            "jobs_per_second": jobs / seconds,
            "runs_seconds": [round(s, 4) for s in entry["drain"]],
            "exactly_once": f"{sum(1 for p in entry['problems'] if p is None)}/{len(entry['problems'])} runs × {jobs:,} jobs",
            "problems": [p for p in entry["problems"] if p],
        }
    ours = rows[THREE_STEPS]["jobs_per_second"]
    return {
        "jobs": jobs,
        "runs": runs,
        "dbos": {"worker_concurrency": WORKER_CONCURRENCY, "polling_interval_sec": POLLING_INTERVAL_SECONDS},
        "rows": [{**r, "three_steps_ratio": ours / r["jobs_per_second"]} for r in rows.values()],
        "three_steps_over_dbos": ours / rows[dbos_name]["jobs_per_second"],
        "three_steps_over_one_step": ours / rows[ONE_STEP]["jobs_per_second"],
        # issue 36: a workflow of plain `def` handlers and steps, against its `async def` twin and DBOS.
        "sync_three_steps_over_dbos": rows[THREE_STEPS_SYNC]["jobs_per_second"] / rows[dbos_name]["jobs_per_second"],
        "sync_over_async_three_steps": rows[THREE_STEPS_SYNC]["jobs_per_second"] / ours,
    }


def render(section: dict[str, Any]) -> str:
    rows = [
        (r["system"], f"{r['jobs_per_second']:,.0f}", f"{r['three_steps_ratio']:.2f}×", r["exactly_once"])
        for r in section["rows"]
    ]
    return report.table(
        f"(d) durable steps: drain {section['jobs']:,} three-step no-op workflows (median of {section['runs']})",
        ("system", "jobs/s", "three-step ÷ it", "ran exactly once"),
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.workflows", description=__doc__)
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args(argv)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="crontick-bench-steps-") as work:
        admin = server.admin_url(stack)
        section = asyncio.run(measure(admin, Path(work), args.jobs, args.runs))
    print(render(section))
    results = json.loads(report.RESULTS.read_text()) if report.RESULTS.exists() else {}
    results["workflows"] = section
    if "targets" in results:  # this run's figure replaces the last one's in the targets table
        value = section["three_steps_over_dbos"]
        results["targets"] = [t for t in results["targets"] if t["name"] != TARGET] + [
            {
                "name": TARGET,
                "value": value,
                "measured": f"{value:.2f}",
                "goal": f"≥ {GOAL_OVER_DBOS:g}",
                "met": value >= GOAL_OVER_DBOS,
            }
        ]
    report.write(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
