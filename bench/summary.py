"""What `make bench` prints: every section's table, from the results (bench/results/latest.json)."""

from __future__ import annotations

from typing import Any

from .report import table


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def throughput_rows(rows: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return [
        (r["system"], _rate(r["jobs_per_second"]), _ratio(r.get("crontick_ratio")), r["exactly_once"]) for r in rows
    ]


def render(results: dict[str, Any]) -> str:
    jobs = results["settings"]["jobs"]
    header = ("system", "jobs/s", "crontick ÷ it", "ran exactly once")
    parts = [
        table(
            f"(a) enqueue {jobs:,} jobs in one call (median of {results['settings']['runs']})",
            header,
            throughput_rows(results["enqueue"]),
        ),
        table(f"(b) drain {jobs:,} no-op jobs in-process", header, throughput_rows(results["drain"])),
        table(
            f"(c) drain {jobs:,} no-op jobs over HTTP (uvicorn on loopback)", header, throughput_rows(results["http"])
        ),
    ]
    scale = results["scale"]
    parts.append(
        table(
            "flat at scale: median time to claim 100 due jobs (and to record them)",
            ("table holds", "claim ms", "record ms"),
            [
                (
                    f"{scale['due_jobs']:,} due jobs only",
                    f"{scale['empty_median_ms']:.2f}",
                    f"{scale['record_empty_median_ms']:.2f}",
                ),
                (
                    f"+ {scale['history_done']:,} done + {scale['history_future']:,} future",
                    f"{scale['history_median_ms']:.2f}",
                    f"{scale['record_history_median_ms']:.2f}",
                ),
                *(
                    [
                        (
                            f"the same, due jobs in {scale['flow_groups']:,} groups, a rate limit declared",
                            f"{scale['flow_median_ms']:.2f}",
                            "",
                        )
                    ]
                    if "flow_median_ms" in scale
                    else []
                ),
                *(
                    [
                        ("nothing due, nothing else pending", f"{scale['idle_empty_median_ms']:.2f}", ""),
                        (
                            f"nothing due, {scale['history_future']:,} future over the history",
                            f"{scale['idle_history_median_ms']:.2f}",
                            "",
                        ),
                    ]
                    if "idle_history_median_ms" in scale
                    else []
                ),
            ],
        )
    )
    idle = results.get("idle")
    if idle:
        parts.append(
            table(
                f"idle tick over HTTP keep-alive (median of {idle['requests']}, interleaved)",
                ("request", "ms"),
                [
                    ("POST /api/cron/tick, nothing due (one statement)", f"{idle['tick_ms']:.2f}"),
                    ("GET /api/health (one indexed query)", f"{idle['health_ms']:.2f}"),
                    ("ratio", f"{idle['ratio']:.2f}×"),
                ],
            )
        )
    cold = results["cold_start"]
    tick = cold["first_tick"]
    parts.append(
        table(
            "cold start",
            ("measure", "ms"),
            [
                ("import api/cron/tick.py (importtime, net of interpreter)", f"{cold['imports']['entry_ms']:.1f}"),
                ("import starlette + psycopg alone", f"{cold['imports']['dependencies_ms']:.1f}"),
                ("first tick of a fresh process, end to end", f"{tick['total_ms']:.1f}"),
                ("  of which: loading the entry module (in the process)", f"{tick['import_ms']:.1f}"),
                ("  of which: connect + tick of 100 jobs", f"{tick['connect_and_tick_ms']:.1f}"),
            ],
        )
    )
    at_scale = results.get("declared")
    if at_scale:
        from .declared import rows

        parts.append(table("declared at scale (medians)", ("tick", "ms", "statements"), rows(at_scale)))
    if results.get("workflows"):
        from .workflows import render as render_workflows

        parts.append(render_workflows(results["workflows"]))
    if results.get("long_work"):
        from .long_work import render as render_long_work

        parts.append(render_long_work(results["long_work"]))
    if results.get("wakeup_day"):
        from .wakeup_day import render as render_day

        parts.append(render_day(results["wakeup_day"]))
    if results.get("tracing_overhead"):
        from .tracing_overhead import render as render_tracing

        parts.append(render_tracing(results["tracing_overhead"]))
    parts.append(
        table(
            "targets",
            ("target", "measured", "goal", "met"),
            [(t["name"], t["measured"], t["goal"], "yes" if t["met"] else "NO") for t in results["targets"]],
        )
    )
    return "\n\n".join(parts)
