"""Durable steps against DBOS Transact: the same three-step no-op workflow drained by DBOS (a Queue in its own
process, at each worker_concurrency of bench.dbos_peer) and by crontick's drain (the loop `crontick tick --drain`
runs) with an `async def` handler and with a plain `def` one, each at the same handlers at once
(CRONTICK_CONCURRENCY) and at two batch sizes, beside crontick's one-step drain, in one run; each system is compared at its best setting.
`python -m bench.workflows [--jobs 5000] [--runs 1]` runs this part alone and writes its section of
bench/results/latest.json; `make bench` runs it with the rest."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from . import report, server
from .dbos_peer import POLLING_INTERVAL_SECONDS, WORKER_CONCURRENCIES
from .noop import JOB_TYPE, STEPS_JOB_TYPE, STEPS_SYNC_JOB_TYPE
from .seen import Seen, share
from .systems import _version, analyze, crontick_drain, crontick_enqueue, crontick_install

JOBS = 5_000
BATCH_SIZE = 100
ONE_STEP = f"crontick drain, one-step no-op jobs, batch {BATCH_SIZE}"
# crontick's three-step rows run at each of these CRONTICK_CONCURRENCY values, DBOS's worker_concurrency ones, and
# each CRONTICK_BATCH_SIZE: each system is compared at its best setting, crontick too (the defaults, concurrency 10
# and batch 100, are among them). A batch larger than the handlers at once lets a def worker's thread run several
# jobs per hop.
CONCURRENCIES = WORKER_CONCURRENCIES
BATCH_SIZES = (100, 1000)
Setting = tuple[int, int]  # (CRONTICK_BATCH_SIZE, CRONTICK_CONCURRENCY)
ASYNC, SYNC = "async def", "def"
GOAL_OVER_DBOS = 10.0
TARGET = "three-step workflows: crontick drain ÷ DBOS"
TARGET_SYNC = "three-step `def` workflows: crontick drain ÷ DBOS"


def _dbos(what: str, url: str, jobs: int, seen_file: Path, concurrency: int) -> float:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.dbos_peer",
            what,
            server.as_url(url),
            str(jobs),
            str(seen_file),
            str(concurrency),
        ],
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


def three_steps(form: str, setting: Setting) -> str:
    """The row of crontick's three-step workflows with `form` handlers (ASYNC or SYNC) at `setting`."""
    handler = "`def` " if form == SYNC else ""
    return f"crontick drain, three-step {handler}workflows, batch {setting[0]}, concurrency {setting[1]}"


async def measure(
    admin: str,
    workdir: Path,
    jobs: int = JOBS,
    runs: int = 1,
    *,
    dbos: bool = True,
    settings: tuple[Setting, ...] = tuple((b, c) for b in BATCH_SIZES for c in CONCURRENCIES),
) -> dict[str, Any]:
    """`_measure` on databases of this run's own (two runs at once on one server do not share one), dropped after.
    `dbos=False` drains crontick's rows only (a quick loop while changing the drain): no DBOS rows, no ratios to it.
    `settings`: the (batch size, concurrency) pairs crontick's three-step rows run at."""
    suffix = uuid.uuid4().hex[:8]
    names = (f"crontick_bench_steps_{suffix}", f"crontick_bench_dbos_{suffix}")
    try:
        return await _measure(admin, workdir, jobs, runs, names, dbos, settings)
    finally:
        for name in names:
            server.drop_database(admin, name)


async def _measure(
    admin: str, workdir: Path, jobs: int, runs: int, names: tuple[str, str], dbos: bool, settings: tuple[Setting, ...]
) -> dict[str, Any]:
    """Each system `runs` times, interleaved (DBOS at each of its worker_concurrency settings, crontick's three-step
    rows at each of `settings`); jobs per second (median) and whether each job ran once; both of crontick's
    handler forms at their best setting against DBOS at its best."""
    seen_file = workdir / "seen-workflows"
    seen = Seen(seen_file, jobs)
    # bench.noop in this process marks this file: in `make bench` the drains before had opened their own.
    share(seen)
    crontick_url = server.fresh_database(admin, names[0])
    await crontick_install(crontick_url)
    dbos_names = {c: _dbos_name(c, POLLING_INTERVAL_SECONDS) for c in WORKER_CONCURRENCIES} if dbos else {}
    crontick_rows = [(ONE_STEP, JOB_TYPE, crontick_drain(BATCH_SIZE))] + [
        (three_steps(form, setting), job_type, crontick_drain(*setting))
        for setting in settings
        for form, job_type in ((ASYNC, STEPS_JOB_TYPE), (SYNC, STEPS_SYNC_JOB_TYPE))
    ]
    raw: dict[str, dict[str, list[Any]]] = {
        n: {"drain": [], "problems": []} for n in (*(r[0] for r in crontick_rows), *dbos_names.values())
    }
    for _ in range(runs):
        for name, job_type, drain in crontick_rows:
            await _truncate(crontick_url)
            seen.reset()
            await crontick_enqueue(crontick_url, jobs, seen, job_type)
            await analyze(crontick_url)
            raw[name]["drain"].append(await drain(crontick_url, jobs, seen))
            raw[name]["problems"].append(seen.check())
            print(f"{name}: {jobs / raw[name]['drain'][-1]:,.0f} jobs/s", file=sys.stderr, flush=True)
        for concurrency, name in dbos_names.items():
            dbos_url = server.fresh_database(admin, names[1])  # a fresh system database each run
            seen.reset()
            _dbos("enqueue", dbos_url, jobs, seen_file, concurrency)
            await analyze(dbos_url)
            raw[name]["drain"].append(_dbos("drain", dbos_url, jobs, seen_file, concurrency))
            raw[name]["problems"].append(seen.check())
            print(f"{name}: {jobs / raw[name]['drain'][-1]:,.0f} workflows/s", file=sys.stderr, flush=True)
    rows = {name: _row(name, entry, jobs) for name, entry in raw.items()}
    best_ours = {
        form: max(settings, key=lambda s: rows[three_steps(form, s)]["jobs_per_second"]) for form in (ASYNC, SYNC)
    }
    ours, ours_sync = (rows[three_steps(form, best_ours[form])]["jobs_per_second"] for form in (ASYNC, SYNC))
    crontick = {
        "settings": [{"batch_size": b, "concurrency": c} for b, c in settings],
        "best": {form: {"batch_size": b, "concurrency": c} for form, (b, c) in best_ours.items()},
    }
    if not dbos_names:
        return {
            "jobs": jobs,
            "runs": runs,
            "crontick": crontick,
            "rows": list(rows.values()),
            "sync_over_async_three_steps": ours_sync / ours,
        }
    best = max(dbos_names, key=lambda c: rows[dbos_names[c]]["jobs_per_second"])
    dbos_best = rows[dbos_names[best]]["jobs_per_second"]
    return {
        "jobs": jobs,
        "runs": runs,
        "crontick": crontick,
        "dbos": {
            "worker_concurrency": list(WORKER_CONCURRENCIES),
            "best_worker_concurrency": best,
            "polling_interval_sec": POLLING_INTERVAL_SECONDS,
        },
        "rows": [
            {
                **r,
                "three_steps_ratio": ours / r["jobs_per_second"],
                "sync_three_steps_ratio": ours_sync / r["jobs_per_second"],
            }
            for r in rows.values()
        ],
        "three_steps_over_dbos": ours / dbos_best,
        "three_steps_over_one_step": ours / rows[ONE_STEP]["jobs_per_second"],
        # issue 36: a workflow of plain `def` handlers and steps, against its `async def` twin and DBOS at its best.
        "sync_three_steps_over_dbos": ours_sync / dbos_best,
        "sync_over_async_three_steps": ours_sync / ours,
    }


def _dbos_name(concurrency: int, polling_seconds: float) -> str:
    return f"DBOS Transact {_version('dbos')}, Queue worker_concurrency {concurrency}, polling {polling_seconds:g} s"


def _row(name: str, entry: dict[str, list[Any]], jobs: int) -> dict[str, Any]:
    seconds = statistics.median(entry["drain"])
    return {
        "system": name,
        "jobs_per_second": jobs / seconds,
        "runs_seconds": [round(s, 4) for s in entry["drain"]],
        "exactly_once": f"{sum(1 for p in entry['problems'] if p is None)}/{len(entry['problems'])} runs × {jobs:,} jobs",
        "problems": [p for p in entry["problems"] if p],
    }


def render(section: dict[str, Any]) -> str:
    rows = [
        (
            r["system"],
            f"{r['jobs_per_second']:,.0f}",
            f"{r['three_steps_ratio']:.2f}×",
            f"{r['sync_three_steps_ratio']:.2f}×" if "sync_three_steps_ratio" in r else "",
            r["exactly_once"],
        )
        for r in section["rows"]
    ]
    table = report.table(
        f"(d) durable steps: drain {section['jobs']:,} three-step no-op workflows (median of {section['runs']})",
        ("system", "jobs/s", "async def ÷ it", "def ÷ it", "ran exactly once"),
        rows,
    )
    if "sync_over_async_three_steps" not in section:  # a results file from before the def row
        return table
    best = section["dbos"].get("best_worker_concurrency", section["dbos"]["worker_concurrency"])
    ours = section.get("crontick", {}).get("best")  # a results file from before crontick's sweep: none
    at = f"crontick at its best: async def {_setting(ours[ASYNC])}, def {_setting(ours[SYNC])}; " if ours else ""
    return (
        f"{table}\n{at}against DBOS at its best (worker_concurrency {best}): async def "
        f"{section['three_steps_over_dbos']:.2f}×, def {section['sync_three_steps_over_dbos']:.2f}×; "
        f"def ÷ async def {section['sync_over_async_three_steps']:.2f}"
    )


def _setting(best: dict[str, int]) -> str:
    return f"batch {best['batch_size']} × concurrency {best['concurrency']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.workflows", description=__doc__)
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--batch",
        default=",".join(map(str, BATCH_SIZES)),
        help="crontick's CRONTICK_BATCH_SIZE values for the three-step rows, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--concurrency",
        default=",".join(map(str, CONCURRENCIES)),
        help="crontick's CRONTICK_CONCURRENCY values for the three-step rows, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--no-dbos",
        action="store_true",
        help="crontick's rows only, for quick loops: prints them and def ÷ async def, writes no results",
    )
    args = parser.parse_args(argv)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="crontick-bench-steps-") as work:
        admin = server.admin_url(stack)
        settings = tuple((int(b), int(c)) for b in args.batch.split(",") for c in args.concurrency.split(","))
        section = asyncio.run(
            measure(admin, Path(work), args.jobs, args.runs, dbos=not args.no_dbos, settings=settings)
        )
    if args.no_dbos:  # not a comparison with DBOS: the committed results keep the last full run
        for r in section["rows"]:
            print(f"{r['system']}: {r['jobs_per_second']:,.0f} jobs/s, runs {r['runs_seconds']} s, {r['exactly_once']}")
        best = section["crontick"]["best"]
        print(f"def ÷ async def, each at its best ({_setting(best[ASYNC])}; {_setting(best[SYNC])}): "
              f"{section['sync_over_async_three_steps']:.2f}")  # fmt: skip
        return 0
    print(render(section))
    results = json.loads(report.RESULTS.read_text()) if report.RESULTS.exists() else {}
    results["workflows"] = section
    if "targets" in results:  # this run's figures replace the last one's in the targets table
        ours = {TARGET: section["three_steps_over_dbos"], TARGET_SYNC: section["sync_three_steps_over_dbos"]}
        results["targets"] = [t for t in results["targets"] if t["name"] not in ours] + [
            {
                "name": name,
                "value": v,
                "measured": f"{v:.2f}",
                "goal": f"≥ {GOAL_OVER_DBOS:g}",
                "met": v >= GOAL_OVER_DBOS,
            }
            for name, v in ours.items()
        ]
    report.write(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
