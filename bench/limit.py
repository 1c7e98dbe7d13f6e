"""Only crontick's drain and HTTP rows beside the plain-SQL limit, interleaved run by run: the ratios issue 13 sets goals for.

`python -m bench.limit --runs 5` (CRONTICK_BENCH_DATABASE_URL, or an embedded server) takes a
minute where `make bench` takes several, so a change to the tick path can be measured before
and after in one sitting: run it from each checkout in turn; each run's ratios are taken
against the plain-SQL row of the same run, so the machine's noise falls on both sides.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from . import http_drain, server
from .noop import JOB_TYPE
from .seen import PATH_VARIABLE, Seen
from .systems import System, all_systems, analyze, clear, crontick_enqueue, crontick_install

ROWS = ("plain_batch", "crontick", "crontick_sync")
HTTP_ROW = "http_4"  # 4 callers, batch 100, async no-op handlers
HTTP_CALLERS = 4


async def _drain_once(system: System, url: str, jobs: int, seen: Seen) -> float:
    await clear(url, system.tables)
    seen.reset()
    await system.enqueue(url, jobs, seen)
    await analyze(url)
    seconds = await system.drain(url, jobs, seen)
    if problem := seen.check():
        raise RuntimeError(f"{system.name}: {problem}")
    return seconds


async def _http_once(url: str, base: str, jobs: int, seen: Seen, job_type: str) -> float:
    await clear(url, "jobs")
    seen.reset()
    await crontick_enqueue(url, jobs, seen, job_type)
    await analyze(url)
    seconds = await http_drain.drain(base, jobs, HTTP_CALLERS)
    if problem := seen.check():
        raise RuntimeError(f"HTTP: {problem}")
    return seconds


async def measure(admin: str, workdir: Path, jobs: int, runs: int, http: bool) -> dict[str, list[float]]:
    """jobs/s per row and run; every row of one run is measured back to back."""
    seen_file = workdir / "seen"
    seen = Seen(seen_file, jobs)
    os.environ[PATH_VARIABLE] = str(seen_file)
    systems = {s.key: s for s in all_systems() if s.key in ROWS}
    url = server.fresh_database(admin, "crontick_bench_limit")
    await crontick_install(url)
    rates: dict[str, list[float]] = {key: [] for key in (*ROWS, *((HTTP_ROW,) if http else ()))}
    with ExitStack() as stack:
        base = stack.enter_context(http_drain.server(url, seen_file)) if http else ""
        for run in range(runs):
            for key in ROWS:
                rates[key].append(jobs / await _drain_once(systems[key], url, jobs, seen))
            if http:
                rates[HTTP_ROW].append(jobs / await _http_once(url, base, jobs, seen, JOB_TYPE))
            line = ", ".join(f"{key} {values[-1]:,.0f}" for key, values in rates.items())
            print(f"run {run + 1}/{runs}: {line} jobs/s", file=sys.stderr, flush=True)
    server.drop_database(admin, "crontick_bench_limit")
    return rates


def report(rates: dict[str, list[float]]) -> str:
    limit = rates["plain_batch"]
    lines = [f"{'row':<14} {'median jobs/s':>14} {'÷ plain SQL, per run':>32}   median ratio"]
    for key, values in rates.items():
        ratios = [v / p for v, p in zip(values, limit, strict=True)]
        shown = " ".join(f"{r:.2f}" for r in ratios)
        lines.append(f"{key:<14} {statistics.median(values):>14,.0f} {shown:>32}   {statistics.median(ratios):.2f}")
    sync = [s / a for s, a in zip(rates["crontick_sync"], rates["crontick"], strict=True)]
    lines.append(f"sync ÷ async, per run: {' '.join(f'{r:.2f}' for r in sync)}; median {statistics.median(sync):.2f}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.limit", description=__doc__)
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-http", action="store_true", help="only the in-process rows")
    args = p.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="crontick-bench-limit-") as work:
        admin = server.admin_url(stack)
        rates = asyncio.run(measure(admin, Path(work), args.jobs, args.runs, not args.no_http))
    print(report(rates))


if __name__ == "__main__":
    main()
