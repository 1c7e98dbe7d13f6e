"""GET /api/metrics: the queue's figures in the Prometheus text format, read in one statement whatever the rows."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from psycopg.types.json import Json
from starlette.requests import Request
from starlette.responses import Response

from crontick.admin.tx import Conn, read
from crontick.db import query
from crontick.flow.claim_args import claim_flow

# https://prometheus.io/docs/instrumenting/exposition_formats/ (text format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Each count stops here (a range of an index read this far at most); a series at the cap means "at least".
COUNT_CAP = 10_000
# The most job types listed (apps have tens; crontick_job_types' own bound).
MAX_TYPES = 1_000
# The duration ring's bucket b holds attempts of 2^(b/2) to 2^((b+1)/2) ms (migration 0020); every
# second bound is a histogram's `le`: 2 ms, 4 ms, ... 2^24 ms (4.7 h).
RING_BUCKETS = 48
DURATION_BOUNDS_MS = tuple(2.0**k for k in range(1, RING_BUCKETS // 2 + 1))
TICK_OUTCOMES = (
    "succeeded", "retried", "failed", "snoozed", "rescued", "released", "fenced", "yielded", "expired",
)  # fmt: skip


class Family(NamedTuple):
    """One metric: its name, TYPE and HELP, and its samples as (name suffix, labels, value)."""

    name: str
    kind: str
    help: str
    samples: list[tuple[str, dict[str, str], float]]


async def read_figures(conn: Conn) -> dict[str, Any]:
    """The scrape's figures: admin_read_begin, then metrics_read (two statements)."""
    flow = claim_flow()  # the rate limits this process declares (the app's CRONTICK_HANDLERS), or None
    limits = Json(flow.obj["limits"] if flow is not None else [])
    async with read(conn, "metrics") as cur:
        await cur.execute(query("metrics_read"), {"cap": COUNT_CAP, "types": MAX_TYPES, "limits": limits})
        row = await cur.fetchone()
    assert row is not None  # one row always
    return row


def families(figures: dict[str, Any]) -> list[Family]:
    """The metric families of one scrape, from read_figures()."""
    ticks = figures["ticks"]
    last_tick = figures["last_tick_seconds"]
    wakeups = figures["wakeups"]
    return [
        Family(
            "crontick_jobs", "gauge", f"Jobs by type and status (each count stops at {COUNT_CAP}).",
            [("", {"type": t, "status": s}, n) for t, s, n in [*_by_status(figures["jobs"]), *figures["running"]]],
        ),
        Family(
            "crontick_jobs_due", "gauge", f"Pending jobs due now and waiting to be claimed (stops at {COUNT_CAP}).",
            [("", {}, figures["due"])],
        ),
        Family(
            "crontick_oldest_due_job_age_seconds", "gauge", "How long the oldest due job has waited (0: none due).",
            [("", {}, figures["oldest_due_seconds"] or 0.0)],
        ),
        Family(
            "crontick_last_tick_age_seconds", "gauge", "Seconds since the last tick finished (+Inf: none ever did).",
            [("", {}, math.inf if last_tick is None else max(0.0, last_tick))],  # a tick stamped ahead: 0, not negative
        ),
        Family(
            "crontick_reminders", "gauge", f"Reminder sends by status (each count stops at {COUNT_CAP}).",
            [("", {"status": s}, n) for s, n in figures["reminders"]],
        ),
        *_run_families(figures),
        Family(
            "crontick_tick_jobs_last_hour", "gauge", "Job outcomes the ticks of the last hour counted.",
            [("", {"outcome": o}, ticks[o]) for o in TICK_OUTCOMES],
        ),
        Family(
            "crontick_tick_reminders_last_hour", "gauge", "Reminders the ticks of the last hour sent or failed.",
            [("", {"outcome": "sent"}, ticks["reminders_sent"]), ("", {"outcome": "failed"}, ticks["reminders_failed"])],
        ),
        Family("crontick_ticks_last_hour", "gauge", "Ticks that finished in the last hour.", [("", {}, ticks["ticks"])]),
        Family(
            "crontick_rate_limit_starts", "gauge", "Job starts within each rate limit's current window.",
            [("", {"limit": name}, used) for name, used, _, _ in figures["rate_limits"]],
        ),
        Family(
            "crontick_rate_limit_capacity", "gauge", "The starts each rate limit allows per window (its count).",
            [("", {"limit": name}, count) for name, _, count, _ in figures["rate_limits"]],
        ),
        Family(
            "crontick_rate_limit_held_jobs", "gauge",
            f"Due jobs a rate limit holds back now, exhausted or paused (stops at {COUNT_CAP}).",
            [("", {"limit": name}, held) for name, _, _, held in figures["rate_limits"]],
        ),
        Family(
            "crontick_wakeups_last_day", "gauge",
            "Wake-ups (CRONTICK_WAKER) booked, and instants whose booking failed, in the last day.",
            [("", {"outcome": "booked"}, wakeups["booked"]), ("", {"outcome": "failed"}, wakeups["failed"])],
        ),
        Family(
            "crontick_wakeup_next_booked_timestamp_seconds", "gauge",
            "Unix time of the next booked wake-up (0: none booked).",
            [("", {}, wakeups["next_at"] or 0.0)],
        ),
    ]  # fmt: skip


def _run_families(figures: dict[str, Any]) -> list[Family]:
    """The last hour's attempts per type: their outcomes and durations, the slow ones, and their steps' durations."""
    return [
        Family(
            "crontick_job_attempts_last_hour", "gauge", "Attempts that ended in the last hour, by type and outcome.",
            list(_attempts(figures["attempts"])),
        ),
        Family(
            "crontick_job_duration_seconds_last_hour", "histogram",
            "Durations of the attempts that ended in the last hour, by type (a sliding window: read it with "
            "histogram_quantile, not rate).",
            list(_histogram(_ring_counts((t, b, d + f + r) for t, b, d, f, r, _ in figures["attempts"]))),
        ),
        Family(
            "crontick_slow_jobs_last_hour", "gauge",
            "Attempts that ran CRONTICK_SLOW_JOB_SECONDS or longer (each logged as slow_job) in the last hour, by type.",
            list(_slow(figures["attempts"])),
        ),
        Family(
            "crontick_step_duration_seconds_last_hour", "histogram",
            "Durations of the job.step calls recorded in the last hour, by job type (a sliding window, as the jobs').",
            list(_histogram(_ring_counts(figures["steps"]))),
        ),
    ]  # fmt: skip


def _by_status(jobs: list[list[Any]]) -> Iterator[tuple[str, str, int]]:
    """(type, status, count) of each status a type has jobs in, from metrics_read's [type, {status: count}] rows."""
    for type_, counts in jobs:
        yield from ((type_, status, n) for status, n in counts.items() if n)


def _attempts(ring: list[list[Any]]) -> Iterator[tuple[str, dict[str, str], float]]:
    totals: dict[tuple[str, str], int] = {}
    for type_, _bucket, done, failed, retried, _slow in ring:
        for outcome, n in (("done", done), ("failed", failed), ("retried", retried)):
            totals[type_, outcome] = totals.get((type_, outcome), 0) + n
    for (type_, outcome), n in sorted(totals.items()):
        yield "", {"type": type_, "outcome": outcome}, n


def _slow(ring: list[list[Any]]) -> Iterator[tuple[str, dict[str, str], float]]:
    """Slow attempts per type, from the ring's rows: every type with attempts in the last hour, 0 when none was slow."""
    totals: dict[str, int] = {}
    for type_, _bucket, _done, _failed, _retried, slow in ring:
        totals[type_] = totals.get(type_, 0) + slow
    yield from (("", {"type": type_}, n) for type_, n in sorted(totals.items()))


def _ring_counts(rows: Iterable[Iterable[Any]]) -> dict[str, list[int]]:
    """Counts per type and duration bucket, from a ring's (type, bucket, count) rows (crontick_type_minutes'
    attempts, crontick_step_minutes' steps: the same buckets)."""
    per_type: dict[str, list[int]] = {}
    for type_, bucket, n in rows:
        per_type.setdefault(type_, [0] * RING_BUCKETS)[min(max(bucket, 0), RING_BUCKETS - 1)] += n
    return per_type


def _histogram(per_type: dict[str, list[int]]) -> Iterator[tuple[str, dict[str, str], float]]:
    """Cumulative buckets per type: bucket b ends at 2^((b+1)/2) ms, so `le` 2^k ms holds buckets 0 .. 2k-1."""
    for type_, counts in sorted(per_type.items()):
        for k, bound_ms in enumerate(DURATION_BOUNDS_MS, start=1):
            yield "_bucket", {"type": type_, "le": _number(bound_ms / 1000)}, sum(counts[: 2 * k])
        yield "_bucket", {"type": type_, "le": "+Inf"}, sum(counts)
        yield "_count", {"type": type_}, sum(counts)


def exposition(found: Iterable[Family]) -> str:
    """The Prometheus text format of `found`: HELP and TYPE lines, then one line per sample."""
    lines = []
    for family in found:
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for suffix, labels, value in family.samples:
            text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
            lines.append(
                f"{family.name}{suffix}{{{text}}} {_number(value)}"
                if text
                else f"{family.name}{suffix} {_number(value)}"
            )
    return "\n".join(lines) + "\n"


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


async def scrape(request: Request, conn: Conn, role: str) -> Response:
    """Behind the API gate (crontick.admin.routing.guarded): the admin's or the viewer's secret as a bearer token;
    refusals and outages answer JSON, as on /api/admin."""
    body = exposition(families(await read_figures(conn)))
    return Response(body, media_type=CONTENT_TYPE, headers={"Cache-Control": "no-store"})
