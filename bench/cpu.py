"""Where a drained batch's time goes: CPU of the database backend and of Python per batch of 100, crontick beside the plain-SQL loop.

`python -m bench.cpu --runs 5` (CRONTICK_BENCH_DATABASE_URL, or an embedded server). Each run
drains the same backlog three ways, back to back: the plain loop (claim 100 with SKIP LOCKED,
one UPDATE per batch, prepared), crontick's drain as shipped (each batch runs while the last
one's record statement is on the server; two batches claimed ahead), and crontick's drain with
one batch claimed ahead (the record statement still claims, but nothing runs meanwhile). The
backend's CPU is read from /proc (the server must run on this machine), Python's from
time.process_time(); wall time over both shows how much of the work overlaps.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import psycopg

import crontick.tick.drain as crontick_drain
from crontick import db
from crontick.settings import Settings

from . import server
from .seen import PATH_VARIABLE, Seen
from .systems import PLAIN_CLAIM, PLAIN_DONE_MANY, analyze, clear, crontick_enqueue, crontick_install, plain_enqueue

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
Sample = tuple[float, float, float]  # backend CPU, Python CPU, wall; seconds


def backend_cpu(pid: int) -> float:
    """utime + stime of a server process, in seconds (/proc/<pid>/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


async def measured(pid: int, run: Callable[[], Awaitable[None]]) -> Sample:
    cpu, py, wall = backend_cpu(pid), time.process_time(), time.perf_counter()
    await run()
    return backend_cpu(pid) - cpu, time.process_time() - py, time.perf_counter() - wall


async def plain(url: str, seen: Seen) -> Sample:
    with psycopg.connect(url, autocommit=True) as conn:

        async def loop() -> None:
            while rows := conn.execute(PLAIN_CLAIM).fetchall():
                for _, payload in rows:
                    seen.mark(payload["i"])
                conn.execute(PLAIN_DONE_MANY, {"ids": [job_id for job_id, _ in rows]})

        return await measured(conn.info.backend_pid, loop)


async def crontick(url: str, ahead: int) -> Sample:
    conn = await db.connect(url)
    crontick_drain.AHEAD_BATCHES, shipped = ahead, crontick_drain.AHEAD_BATCHES
    try:

        async def loop() -> None:
            await crontick_drain.drain(conn, Settings(database_url=url, batch_size=100), source="bench")

        return await measured(conn.info.backend_pid, loop)
    finally:
        crontick_drain.AHEAD_BATCHES = shipped
        await conn.close()


async def measure(admin: str, workdir: Path, jobs: int, runs: int) -> dict[str, list[Sample]]:
    seen_file = workdir / "seen"
    seen = Seen(seen_file, jobs)
    os.environ[PATH_VARIABLE] = str(seen_file)
    url = server.fresh_database(admin, "crontick_bench_cpu")
    await crontick_install(url)
    rows: dict[str, Callable[[], Awaitable[Sample]]] = {
        "plain SQL loop": lambda: plain(url, seen),
        "crontick drain (as shipped)": lambda: crontick(url, crontick_drain.AHEAD_BATCHES),
        "crontick drain, 1 batch ahead": lambda: crontick(url, 1),
    }
    samples: dict[str, list[Sample]] = {name: [] for name in rows}
    for run in range(runs):
        for name, drain in rows.items():
            await clear(url, "jobs")
            seen.reset()
            enqueue = plain_enqueue if name.startswith("plain") else crontick_enqueue
            await enqueue(url, jobs, seen)
            await analyze(url)
            samples[name].append(await drain())
            if problem := seen.check():
                raise RuntimeError(f"{name}: {problem}")
        print(f"run {run + 1}/{runs} done", file=sys.stderr, flush=True)
    server.drop_database(admin, "crontick_bench_cpu")
    return samples


def report(samples: dict[str, list[Sample]], jobs: int) -> str:
    batches = jobs / 100
    plain_wall = [s[2] for s in samples["plain SQL loop"]]
    lines = [
        f"{'per batch of 100, medians':<32} {'backend CPU ms':>15} {'Python CPU ms':>14} {'wall ms':>8}  ÷ plain (wall), per run"
    ]
    for name, values in samples.items():
        cpu, py, wall = (statistics.median(v[i] for v in values) * 1000 / batches for i in range(3))
        ratios = " ".join(f"{p / v[2]:.2f}" for p, v in zip(plain_wall, values, strict=True))
        lines.append(f"{name:<32} {cpu:>15.2f} {py:>14.2f} {wall:>8.2f}  {ratios}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.cpu", description=__doc__)
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="crontick-bench-cpu-") as work:
        admin = server.admin_url(stack)
        samples: Any = asyncio.run(measure(admin, Path(work), args.jobs, args.runs))
    print(report(samples, args.jobs))


if __name__ == "__main__":
    main()
