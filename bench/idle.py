"""The idle tick against GET /api/health, on an empty database and on one with history, optionally beside another checkout.

`python -m bench.idle [--against /path/to/checkout] [--rounds N]` serves this checkout (and the
other one, with its own .venv, on its own database) under uvicorn, and measures `make bench`'s
idle row (bench.http_drain.idle_latency: 300 idle ticks and health checks, interleaved on one
keep-alive connection) round after round, the servers taking turns, so that both see the same
noise. History: 20,000 reminders sent for past bookings, 1,000 upcoming bookings already
reminded, 100,000 done jobs (none past its keep period, so the tick stays idle).

It also times the probe statement alone, round trip from this process, beside the health query:
this checkout's `tick_probe`, and with --against the other checkout's, each on its own database.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from crontick import db
from crontick.settings import Settings
from crontick.tick import health

from . import http_drain, server

IDLE_REQUESTS = 300
STATEMENT_CALLS = 300

# Bench set-up only: rows made in the server. Past bookings each with their sent reminder; upcoming
# ones inside the 24 h window, reminded; a few past the window, not yet; done jobs kept (updated
# within CRONTICK_KEEP_DONE_DAYS, so retention has nothing due and the tick stays idle).
HISTORY = (
    """
    insert into bookings (customer_name, email, starts_at)
    select 'past ' || g, 'p' || g || '@example.com', now() - interval '60 days' + g * interval '4 minutes'
    from generate_series(1, 20000) g
    """,
    """
    insert into bookings (customer_name, email, starts_at)
    select 'soon ' || g, 's' || g || '@example.com', now() + interval '10 minutes' + g * interval '80 seconds'
    from generate_series(1, 1000) g
    """,
    """
    insert into bookings (customer_name, email, starts_at)
    select 'later ' || g, 'l' || g || '@example.com', now() + interval '25 hours' + g * interval '1 hour'
    from generate_series(1, 100) g
    """,
    """
    insert into reminder_sends (booking_id, kind, channel, status, sent_at, created_at, updated_at)
    select id, '24h', 'console', 'sent', now(), now(), now() from bookings where starts_at < now() + interval '24 hours'
    """,
    """
    insert into jobs (type, payload, status, attempts, run_after, created_at, updated_at, finished_at)
    select 'bench.noop', jsonb_build_object('i', g), 'done', 1, t, t, t, t
    from generate_series(1, 100000) g, lateral (select now() - interval '1 day' + g * interval '0.5 seconds' as t) x
    """,
)


def load_history(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in HISTORY:
            conn.execute(statement)
        conn.execute("vacuum analyze")


def probe_params() -> dict[str, Any]:
    """tick_probe's parameters as an idle tick of the default settings passes them (nothing to sync, no alerts URL)."""
    return {
        "now": None,
        "limit": 100,
        "lease": timedelta(seconds=38),
        "source": "bench",
        "summary": Jsonb({}),
        "schedules_unsynced": False,
        "kinds": ["24h"],
        "leads": [timedelta(hours=24)],
        "floors": [timedelta(0)],
        "silent_after": None,
        "alerts_on": False,
        "done_before": None,
        "failed_before": None,
        "kept_before": None,
    }


def query_of(root: Path, name: str) -> str:
    """A named query as `root`'s checkout has it (comment lines stripped, as crontick.db loads it)."""
    for path in sorted((root / "sql").glob("*.sql")):
        found = db.parse_queries(path.read_text(encoding="utf-8")).get(name)
        if found is not None:
            return db.without_comment_lines(found)
    raise LookupError(f"expected a query named {name!r} in {root / 'sql'}, got none")


def statement_times(urls: dict[str, str], statements: dict[str, str]) -> dict[str, float]:
    """Median round trip (ms) of each statement, on its own database's connection, called in turn."""
    params = probe_params()
    stale_after = health.stale_after_seconds(Settings())
    conns = {label: psycopg.connect(urls[label], autocommit=True) for label in statements}
    times: dict[str, list[float]] = {label: [] for label in statements}
    health_conn = psycopg.connect(next(iter(urls.values())), autocommit=True)
    times["health"] = []
    try:
        for i in range(STATEMENT_CALLS + 20):
            for label, text in statements.items():
                began = time.perf_counter()
                conns[label].execute(text, params).fetchall()
                if i >= 20:
                    times[label].append(time.perf_counter() - began)
            began = time.perf_counter()
            health_conn.execute(db.query("health_status"), {"stale_after": stale_after}).fetchall()
            if i >= 20:
                times["health"].append(time.perf_counter() - began)
    finally:
        for conn in (*conns.values(), health_conn):
            conn.close()
    return {label: round(statistics.median(t) * 1000, 3) for label, t in times.items()}


def migrate(url: str, root: Path) -> None:
    subprocess.run([str(root / ".venv" / "bin" / "crontick"), "migrate"], env={"DATABASE_URL": url}, check=True)


async def measure(admin: str, sides: dict[str, Path], history: bool, rounds: int, workdir: Path) -> dict[str, Any]:
    case = "history" if history else "empty"
    urls = {}
    for label, root in sides.items():
        urls[label] = server.fresh_database(admin, f"crontick_bench_idle_{label}_{case}")
        migrate(urls[label], root)
        if history:
            load_history(urls[label])
    result: dict[str, Any] = {
        "statements_ms": statement_times(urls, {label: query_of(root, "tick_probe") for label, root in sides.items()})
    }
    with ExitStack() as stack:
        bases = {}
        for label, root in sides.items():
            seen = workdir / label / "seen"
            seen.parent.mkdir(exist_ok=True)
            python = str(root / ".venv" / "bin" / "python")
            bases[label] = stack.enter_context(http_drain.server(urls[label], seen, root=root, python=python))
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label in sides}
        for _ in range(rounds):
            for label, base in bases.items():
                runs[label].append(await http_drain.idle_latency(base, IDLE_REQUESTS))
    for label, measured in runs.items():
        result[label] = {
            "ratios": [m["ratio"] for m in measured],
            "tick_ms": [m["tick_ms"] for m in measured],
            "health_ms": [m["health_ms"] for m in measured],
            "median_ratio": statistics.median(m["ratio"] for m in measured),
        }
    for url in urls.values():
        server.drop_database(admin, str(conninfo_to_dict(url)["dbname"]))
    return result


async def main_async(args: argparse.Namespace) -> None:
    sides = {"this": http_drain.ROOT}
    if args.against:
        sides = {"against": Path(args.against).resolve(), **sides}
    with ExitStack() as stack:
        admin = server.admin_url(stack)
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="crontick-idle-")))
        for history in (False, True):
            found = await measure(admin, sides, history, args.rounds, workdir)
            print(
                f"{'history' if history else 'empty'}: statements (ms, median round trip) {found.pop('statements_ms')}"
            )
            for label, row in found.items():
                print(
                    f"  {label}: idle tick ÷ health, median of {args.rounds} rounds {row['median_ratio']:.2f}; "
                    f"rounds {row['ratios']}; tick ms {row['tick_ms']}; health ms {row['health_ms']}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.idle", description=__doc__)
    parser.add_argument("--against", help="another checkout (with its .venv) to measure beside this one")
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
