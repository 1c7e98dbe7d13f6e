"""`make bench`: every workload, side by side in one run; prints the table, writes results/latest.json."""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from crontick import enqueue_many

from . import (
    chart,
    coldstart,
    declared,
    http_drain,
    long_work,
    report,
    scale,
    server,
    summary,
    tracing_overhead,
    wakeup_day,
    workflows,
)
from .noop import JOB_TYPE, SYNC_JOB_TYPE
from .seen import PATH_VARIABLE, Seen
from .systems import System, all_systems, analyze, clear, crontick_enqueue, crontick_install

FIRST_TICK_JOBS = 100
SLOW_RUN_SECONDS = 5.0  # a system whose first drain took longer than this runs SLOW_RUNS times, not --runs
SLOW_RUNS = 3
HTTP_RUNS = {  # (CRONTICK_BATCH_SIZE, concurrent callers, job type): row name
    (100, 1, JOB_TYPE): "crontick over HTTP, 1 caller",
    (100, 4, JOB_TYPE): "crontick over HTTP, 4 callers",
    (100, 4, SYNC_JOB_TYPE): "crontick over HTTP, 4 callers, sync def handlers",
    (1000, 4, JOB_TYPE): "crontick over HTTP, 4 callers, CRONTICK_BATCH_SIZE=1000",
}
IDLE_REQUESTS = 300  # idle ticks (and health checks, interleaved) whose median latency is compared


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, "").strip() or default)


def _cold_python() -> str:
    """The runtime venv (no benchmark extras, whose imports would inflate both sides), when there is one."""
    chosen = os.environ.get("CRONTICK_BENCH_COLD_PYTHON", "").strip()
    default = http_drain.ROOT / ".venv" / "bin" / "python"
    return chosen or (str(default) if default.exists() else sys.executable)


class Bench:
    """One benchmark run: its server, its job count and runs, and the file that counts each job's runs."""

    def __init__(self, admin: str, workdir: Path, jobs: int, runs: int, only: set[str]) -> None:
        self.admin, self.jobs, self.runs, self.only = admin, jobs, runs, only
        self.seen_file = workdir / "seen"
        self.seen = Seen(self.seen_file, jobs)
        os.environ[PATH_VARIABLE] = str(self.seen_file)  # for bench.noop in this process
        self.workdir = workdir
        self.idle: dict[str, Any] = {}

    def log(self, text: str) -> None:
        print(f"[{datetime.now().strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    async def systems(self) -> dict[str, dict[str, list[Any]]]:
        """Every system, run after run, interleaved so the machine's noise falls on all alike."""
        systems = [s for s in all_systems() if not self.only or s.key in self.only]
        urls: dict[str, str] = {}
        for i, system in enumerate(systems):
            urls[system.name] = server.fresh_database(self.admin, f"crontick_bench_{i}")
            await system.install(urls[system.name])
        raw: dict[str, dict[str, list[Any]]] = {s.name: {"enqueue": [], "drain": [], "problems": []} for s in systems}
        for run in range(self.runs):
            for system in systems:
                if run >= SLOW_RUNS and raw[system.name]["drain"][0] > SLOW_RUN_SECONDS:
                    continue  # a slow peer's median of 3 is as telling, and keeps `make bench` short
                enq, drained, problem = await self.one_run(system, urls[system.name])
                raw[system.name]["enqueue"].append(enq)
                raw[system.name]["drain"].append(drained)
                raw[system.name]["problems"].append(problem)
                self.log(
                    f"run {run + 1}/{self.runs} {system.name}: drain {self.jobs / drained:,.0f} jobs/s"
                    + (f" PROBLEM: {problem}" if problem else "")
                )
        return raw

    async def one_run(self, system: System, url: str) -> tuple[float, float, str | None]:
        await clear(url, system.tables)
        self.seen.reset()
        enq = await system.enqueue(url, self.jobs, self.seen)
        await analyze(url)
        drained = await system.drain(url, self.jobs, self.seen)
        return enq, drained, self.seen.check()

    async def http(self) -> dict[str, dict[str, list[Any]]]:
        url = server.fresh_database(self.admin, "crontick_bench_http")
        await crontick_install(url)
        raw: dict[str, dict[str, list[Any]]] = {name: {"drain": [], "problems": []} for name in HTTP_RUNS.values()}
        for batch_size in sorted({batch for batch, _, _ in HTTP_RUNS}):
            with http_drain.server(url, self.seen_file, batch_size=batch_size) as base:
                if batch_size == 100:
                    await clear(url, "jobs")
                    self.idle = await http_drain.idle_latency(base, IDLE_REQUESTS)
                    self.log(f"idle tick {self.idle['tick_ms']:.2f} ms, health {self.idle['health_ms']:.2f} ms")
                for run in range(self.runs):
                    for (batch, callers, job_type), name in HTTP_RUNS.items():
                        if batch == batch_size:
                            await self.http_run(url, base, callers, job_type, raw[name])
                            self.log(
                                f"run {run + 1}/{self.runs} {name}: {self.jobs / raw[name]['drain'][-1]:,.0f} jobs/s"
                            )
        return raw

    async def http_run(self, url: str, base: str, callers: int, job_type: str, entry: dict[str, list[Any]]) -> None:
        await clear(url, "jobs")
        self.seen.reset()
        await crontick_enqueue(url, self.jobs, self.seen, job_type)
        await analyze(url)
        entry["drain"].append(await http_drain.drain(base, self.jobs, callers))
        entry["problems"].append(self.seen.check())

    async def scale(self, history: int) -> dict[str, Any]:
        empty = server.fresh_database(self.admin, "crontick_bench_scale_empty")
        full = server.fresh_database(self.admin, "crontick_bench_scale_history")
        await crontick_install(empty)
        await crontick_install(full)
        self.log(f"scale: loading {history:,} done and {history // 10:,} future jobs")
        result = await scale.measure(empty, full, history, history // 10)
        server.drop_database(self.admin, "crontick_bench_scale_history")
        return result

    async def cold_start(self, repeats: int) -> dict[str, Any]:
        python = _cold_python()
        self.log(f"cold start: -X importtime with {python}")
        imports = coldstart.imports(python, repeats)
        url = server.fresh_database(self.admin, "crontick_bench_first_tick")
        await crontick_install(url)
        seen_file = self.workdir / "seen-first-tick"
        seen = Seen(seen_file, FIRST_TICK_JOBS)
        runs = []
        for _ in range(self.runs):
            await clear(url, "jobs")
            seen.reset()
            with psycopg.connect(url, autocommit=True) as conn:
                enqueue_many(conn, [(JOB_TYPE, {"i": i}) for i in range(FIRST_TICK_JOBS)])
            runs.append(coldstart.first_tick(python, url, seen_file))
            if problem := seen.check():
                raise RuntimeError(f"first tick: {problem}")
        median = {k: statistics.median(r[k] for r in runs) for k in ("total_ms", "import_ms", "connect_and_tick_ms")}
        return {"python": python, "imports": imports, "first_tick": {**median, "runs": runs}}

    async def workflows(self) -> dict[str, Any]:
        self.log(f"durable steps: {workflows.JOBS:,} three-step workflows, crontick and DBOS Transact")
        return await workflows.measure(self.admin, self.workdir, workflows.JOBS, min(self.runs, SLOW_RUNS))

    async def long_work(self) -> dict[str, Any]:
        self.log("long work: the 20,000-row import, a 200-item job.map and the reply pipeline under an 8 s budget")
        return await long_work.measure(self.admin)

    async def declared(self) -> dict[str, Any]:
        self.log(f"declared at scale: {declared.SCHEDULES:,} schedules and {declared.HOOKS} hooks")
        return await declared.measure(self.admin, self.workdir, IDLE_REQUESTS, self.runs)


def _throughput(raw: dict[str, dict[str, list[Any]]], key: str, jobs: int) -> dict[str, dict[str, Any]]:
    out = {}
    for name, entry in raw.items():
        seconds = statistics.median(entry[key])
        checked = sum(1 for p in entry["problems"] if p is None)
        out[name] = {
            "system": name,
            "jobs_per_second": jobs / seconds,
            "runs_seconds": [round(s, 4) for s in entry[key]],
            "exactly_once": f"{checked}/{len(entry['problems'])} runs × {jobs:,} jobs",
            "problems": [p for p in entry["problems"] if p],
        }
    return out


def _with_ratio(rows: dict[str, dict[str, Any]], ours: float, skip: set[str]) -> list[dict[str, Any]]:
    return [{**r, "crontick_ratio": None if name in skip else ours / r["jobs_per_second"]} for name, r in rows.items()]


def assemble(
    bench: Bench,
    raw: dict[str, Any],
    http: dict[str, Any],
    scaled: dict[str, Any],
    cold: dict[str, Any],
    at_scale: dict[str, Any],
) -> dict[str, Any]:
    jobs = bench.jobs
    systems = {s.key: s for s in all_systems() if s.name in raw}
    name = {key: s.name for key, s in systems.items()}
    enqueue = _throughput({s.name: raw[s.name] for s in systems.values() if s.enqueue_label}, "enqueue", jobs)
    for s in systems.values():
        if s.enqueue_label:
            enqueue[s.name]["system"] = s.enqueue_label
    drained = _throughput(raw, "drain", jobs)
    over_http = _throughput(http, "drain", jobs)
    rate = {key: drained[n]["jobs_per_second"] for key, n in name.items()}
    ours = rate["crontick"]
    ours_enqueue = enqueue[name["crontick"]]["jobs_per_second"]
    four = over_http[HTTP_RUNS[100, 4, JOB_TYPE]]["jobs_per_second"]
    limit = rate.get("plain_batch", float("nan"))  # the plain-SQL limit: claim 100, one UPDATE per batch
    idle = bench.idle or {"tick_ms": float("nan"), "health_ms": float("nan")}
    targets = [
        report.target(
            "idle tick ÷ GET /api/health, HTTP keep-alive, medians", idle["tick_ms"] / idle["health_ms"], 1.5, "≤"
        ),
        report.target("drain, sync def ÷ async def handlers", rate.get("crontick_sync", float("nan")) / ours, 0.7, "≥"),
        report.target("drain async, batch 100 ÷ plain SQL limit", ours / limit, 0.9, "≥"),
        report.target("HTTP, 4 callers, async ÷ plain SQL limit", four / limit, 0.5, "≥"),
        report.target("import api/cron/tick.py ÷ starlette + psycopg", cold["imports"]["ratio"], 1.15, "≤"),
        report.target(
            "in-process drain ÷ pgqueuer asyncpg", ours / rate.get("pgqueuer_asyncpg", float("nan")), 1.0, "≥"
        ),
        report.target("HTTP drain, 4 callers (jobs/s)", four, 10_000, "≥"),
        report.target("enqueue_many (jobs/s)", ours_enqueue, 50_000, "≥"),
        report.target("claim 100 with history ÷ without", scaled["ratio"], 1.5, "≤"),
        report.target(
            f"claim finding nothing due, {scaled.get('history_future', 0):,} future jobs ÷ none",
            scaled.get("idle_ratio", float("nan")),
            1.5,
            "≤",
        ),
        # Flow control (issue 20): groups in the drain, a rate limit and 10,000 groups in the claim.
        report.target(
            "drain over 1,000 groups ÷ plain SQL limit", rate.get("crontick_groups", float("nan")) / limit, 0.5, "≥"
        ),
        report.target(
            "claim 100, rate limit + 10,000 groups ÷ plain claim, both with history",
            scaled.get("flow_ratio", float("nan")),
            1.5,
            "≤",
        ),
        report.target(
            f"idle tick, {declared.SCHEDULES:,} schedules + {declared.HOOKS} hooks declared ÷ none",
            at_scale["idle"]["ratio"],
            1.2,
            "≤",
        ),
    ]
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "postgres": server.describe(bench.admin),
        },
        "settings": {
            "jobs": jobs,
            "runs": bench.runs,
            "statistic": "median of runs",
            "note": "each run truncates the system's tables, enqueues, runs ANALYZE (as autovacuum would), then drains",
            "slow_systems": f"a system whose first drain took over {SLOW_RUN_SECONDS:g} s runs {SLOW_RUNS} times",
        },
        "enqueue": _with_ratio(enqueue, ours_enqueue, {name["crontick"]}),
        "drain": _with_ratio(drained, ours, {name["crontick"]}),
        "http": _with_ratio(over_http, ours, set(over_http)),
        "idle": bench.idle,
        "scale": scaled,
        "cold_start": cold,
        "declared": at_scale,
        "targets": targets,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="crontick-bench-work-") as work:
        admin = server.admin_url(stack)
        # Registered after the server, so it runs before an embedded server stops (the stack unwinds in reverse).
        stack.callback(server.drop_bench_databases, admin)
        only = {key for key in args.systems.split(",") if key}
        bench = Bench(admin, Path(work), args.jobs, args.runs, only)
        bench.log(f"PostgreSQL: {server.describe(admin)}; {args.jobs:,} jobs, {args.runs} runs")
        began = time.monotonic()
        raw = await bench.systems()
        http = await bench.http()
        scaled = await bench.scale(args.history)
        cold = await bench.cold_start(args.import_repeats)
        at_scale = await bench.declared()
        steps = await bench.workflows()
        results = assemble(bench, raw, http, scaled, cold, at_scale)
        results["workflows"] = steps
        for target, key in (
            (workflows.TARGET, "three_steps_over_dbos"),
            (workflows.TARGET_SYNC, "sync_three_steps_over_dbos"),
        ):
            results["targets"].append(report.target(target, steps[key], workflows.GOAL_OVER_DBOS, "≥"))
        long = await bench.long_work()
        results["long_work"] = long
        results["targets"].extend(long_work.targets(long))
        bench.log("a simulated day: a fixed 15-minute schedule, then the waker (QStash stand-in)")
        results["wakeup_day"] = day = wakeup_day.measure(admin)
        results["targets"].extend(wakeup_day.targets(day))
        bench.log("tracing overhead: the drain untraced, then traced (BatchSpanProcessor, SimpleSpanProcessor)")
        # In a thread: the section drains with asyncio.run of its own, as `python -m bench.tracing_overhead` does.
        results["tracing_overhead"] = traced = await asyncio.to_thread(
            tracing_overhead.measure, admin, tracing_overhead.JOBS, min(bench.runs, SLOW_RUNS + 2)
        )
        results["targets"].extend(tracing_overhead.targets(traced))
        results["settings"]["bench_seconds"] = round(time.monotonic() - began)
        return results


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--jobs", type=int, default=_int("CRONTICK_BENCH_JOBS", 10_000))
    p.add_argument("--runs", type=int, default=_int("CRONTICK_BENCH_RUNS", 5))
    p.add_argument(
        "--history",
        type=int,
        default=_int("CRONTICK_BENCH_HISTORY", 1_000_000),
        help="finished jobs in the flat-at-scale table (future ones: a tenth of it)",
    )
    p.add_argument("--import-repeats", type=int, default=7)
    p.add_argument("--systems", default="", help="comma-separated keys to run only some (crontick is always needed)")
    p.add_argument("--output", type=Path, default=report.RESULTS)
    args = p.parse_args()
    results = asyncio.run(main_async(args))
    report.write(results, args.output)
    chart.write(
        results, [args.output.with_name("bench.svg"), *([] if args.output != report.RESULTS else [chart.DOCS_COPY])]
    )
    print(summary.render(results))
    for case in ("empty", "history", "flow"):
        print(f"\nEXPLAIN (ANALYZE, BUFFERS) of the claim, {case}:\n{results['scale'][f'explain_{case}']}")
    print(f"\nwritten: {args.output}")


if __name__ == "__main__":
    main()
