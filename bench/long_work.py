"""Long work on a short clock (issue 36): the 20,000-row import as a job.map of 500-row chunks and a 200-item job.map,
each under the default 8 s budget (the ticks it needs, its time against the same work in one long tick, the statements
a yield sends), and the seeds' reply pipeline (a 2 s LLM step, then a 1 s Twilio send declared at_most_once) fed
replies while ticks run: duplicates, replies cut by the budget, replies failed. Ticks run in this process one after
another, the next at once while a tick answers `more` (as a scheduler's loop does), on a local fake of every outside
call that takes as long as the real one and counts calls. `python -m bench.long_work` runs this part alone (about a
minute and a half) and writes its section of bench/results/latest.json; `make bench` runs it with the rest."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from collections import Counter
from contextlib import ExitStack
from typing import Any

import psycopg

from crontick import db, enqueue
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.wire import traced

from . import long_handlers, report, server
from .local_http import LocalHandler, LocalServer
from .long_handlers import CHUNK_ROWS, IMPORT_TYPE, MAP_TYPE, PEOPLE_SQL, REPLY_TYPE

ROUTE_SECONDS = {"enrich": 0.25, "item": 0.05, "llm": 2.0, "twilio": 1.0}  # what each fake call takes
IMPORT_ROWS = 20_000
MAP_ITEMS = 200
REPLIES = 60
ARRIVAL_SECONDS = 15.0  # the replies arrive evenly over this long, while ticks run
BUDGET_SECONDS = 8.0  # CRONTICK_TIME_BUDGET_SECONDS' default
LONG_TICK_SECONDS = 300.0  # "the same work in one long tick": a budget it never reaches
MAX_TICKS = 200
SECRET = "bench-secret-" + "b" * 32
STEP_WRITE = "job_steps_record"  # a step's own write (group committed), which a yield does not add to


class Fakes(LocalServer):
    """The LLM, Twilio, the enrichment API and the map's API on 127.0.0.1: each answers after ROUTE_SECONDS and
    counts its calls by the key in the body (a caller the budget stopped, which hung up, is counted all the same)."""

    def __init__(self) -> None:
        super().__init__(_FakeHandler)
        self.calls: Counter[tuple[str, str]] = Counter()

    def count(self, route: str) -> Counter[str]:
        with self.lock:
            return Counter({key: n for (r, key), n in self.calls.items() if r == route})


class _FakeHandler(LocalHandler):
    server: Fakes

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        route = self.path.strip("/")
        key = str(json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))["key"])
        with self.server.lock:
            self.server.calls[route, key] += 1
        time.sleep(ROUTE_SECONDS[route])
        self.answer(200, json.dumps({"key": key}).encode())


def _settings(url: str, budget_seconds: float) -> Settings:
    return Settings(
        database_url=url, cron_secret=SECRET, time_budget_seconds=budget_seconds, lease_seconds=budget_seconds + 5
    )


def _tick(url: str, settings: Settings, trace: bool) -> tuple[TickResult, list[str]]:
    async def run(conn: psycopg.AsyncConnection[Any]) -> TickResult:
        return await run_tick(conn, settings, source="bench")

    if trace:
        return traced(url, run)

    async def plain() -> TickResult:
        conn = await db.connect(url)
        try:
            return await run(conn)
        finally:
            await conn.close()

    return asyncio.run(plain()), []


def _open(url: str, job_type: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "select count(*) from crontick.jobs where type = %s and status in ('pending', 'running', 'waiting')",
            (job_type,),
        ).fetchone()
    return int(row[0]) if row else 0


def _ticks_until_done(
    url: str, budget_seconds: float, job_type: str, trace: bool = False, arriving: threading.Thread | None = None
) -> dict[str, Any]:
    """Tick until no job of `job_type` is left (and none is still arriving); the next tick at once after `more`."""
    settings = _settings(url, budget_seconds)
    began = time.monotonic()
    ticks: list[dict[str, Any]] = []
    while len(ticks) < MAX_TICKS:
        result, names = _tick(url, settings, trace)
        sent = Counter(names)
        ticks.append({"yielded": result.jobs.yielded, "succeeded": result.jobs.succeeded, "statements": sent})
        if not _open(url, job_type) and (arriving is None or not arriving.is_alive()):
            break
        if not result.more:
            time.sleep(0.2)  # nothing due now: the scheduler's next call
    seconds = time.monotonic() - began
    return {
        "ticks": len(ticks),
        "seconds": round(seconds, 2),
        "yields": sum(t["yielded"] for t in ticks),
        "each": ticks,
    }


def _fresh(url: str, job_type: str, payload: dict[str, Any]) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("truncate crontick.jobs, bench_people")
        return enqueue(conn, job_type, payload)


def _status(url: str, job_id: int) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("select status from crontick.jobs where id = %s", (job_id,)).fetchone()
    return str(row[0]) if row else "gone"


def _import(url: str, fakes: Fakes, budget_seconds: float) -> dict[str, Any]:
    fakes.calls.clear()
    job_id = _fresh(url, IMPORT_TYPE, {"rows": IMPORT_ROWS, "url": fakes.url})
    run = _ticks_until_done(url, budget_seconds, IMPORT_TYPE)
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("select count(*) from bench_people").fetchone()
    enriched = fakes.count("enrich")
    run.pop("each")
    return {
        **run,
        "status": _status(url, job_id),
        "rows": rows[0] if rows else 0,
        "chunks_called": len(enriched),
        "chunks_called_twice": sum(1 for n in enriched.values() if n > 1),
    }


def _map(url: str, fakes: Fakes, budget_seconds: float, trace: bool) -> dict[str, Any]:
    fakes.calls.clear()
    job_id = _fresh(url, MAP_TYPE, {"items": MAP_ITEMS, "url": fakes.url})
    run = _ticks_until_done(url, budget_seconds, MAP_TYPE, trace=trace)
    called = fakes.count("item")
    each = run.pop("each")
    out = {**run, "status": _status(url, job_id), "items_called_twice": sum(1 for n in called.values() if n > 1)}
    if trace:  # a yield's tick against the finishing tick: the statements besides the steps' own writes
        others = [sum(n for name, n in t["statements"].items() if name != STEP_WRITE) for t in each]
        yielding = [o for o, t in zip(others, each, strict=True) if t["yielded"]]
        out["statements_besides_step_writes"] = others
        out["statements_per_yield"] = (max(yielding) - others[-1]) if yielding else None
    return out


def _replies(url: str, fakes: Fakes) -> dict[str, Any]:
    fakes.calls.clear()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("truncate crontick.jobs")

    def arrive() -> None:  # as the Twilio webhook enqueues them: one every ARRIVAL_SECONDS / REPLIES
        with psycopg.connect(url, autocommit=True) as conn:
            for n in range(REPLIES):
                enqueue(conn, REPLY_TYPE, {"n": n, "url": fakes.url})
                time.sleep(ARRIVAL_SECONDS / REPLIES)

    arriving = threading.Thread(target=arrive)
    arriving.start()
    run = _ticks_until_done(url, BUDGET_SECONDS, REPLY_TYPE, arriving=arriving)
    arriving.join()
    run.pop("each")
    llm, sent = fakes.count("llm"), fakes.count("twilio")
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "select j.payload->>'n', j.status, j.attempts, extract(epoch from s.created_at - j.created_at)"
            " from crontick.jobs j left join crontick.job_steps s on s.job_id = j.id and s.name = 'send'"
            " where j.type = %s",
            (REPLY_TYPE,),
        ).fetchall()
    cut = sum(1 for n, _, attempts, _ in rows if attempts != 1 or llm[f"reply-{n}"] != 1)
    latencies = [float(seconds) for *_, seconds in rows if seconds is not None]
    return {
        **run,
        "replies": len(rows),
        "done": sum(1 for _, status, _, _ in rows if status == "done"),
        "failed": sum(1 for _, status, _, _ in rows if status == "failed"),
        "duplicates": sum(n - 1 for n in sent.values() if n > 1),
        "cut_by_budget": cut,
        "unsent": REPLIES - len(sent),
        "reply_seconds_median": round(statistics.median(latencies), 2) if latencies else None,
        "reply_seconds_max": round(max(latencies), 2) if latencies else None,
    }


def measure_sync(admin: str) -> dict[str, Any]:
    url = server.fresh_database(admin, "crontick_bench_long_work")
    asyncio.run(db.migrate(url))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(PEOPLE_SQL)
    long_handlers.database_url[0] = url
    fakes = Fakes()
    threading.Thread(target=fakes.serve_forever, daemon=True).start()
    try:
        imports = {"short": _import(url, fakes, BUDGET_SECONDS), "long": _import(url, fakes, LONG_TICK_SECONDS)}
        maps = {"short": _map(url, fakes, BUDGET_SECONDS, True), "long": _map(url, fakes, LONG_TICK_SECONDS, False)}
        replies = _replies(url, fakes)
    finally:
        fakes.shutdown()
        fakes.server_close()
    return {
        "budget_seconds": BUDGET_SECONDS,
        "fake_seconds": ROUTE_SECONDS,
        "import": {"rows": IMPORT_ROWS, "chunk_rows": CHUNK_ROWS, **imports},
        "map": {"items": MAP_ITEMS, **maps},
        "replies": {"arrival_seconds": ARRIVAL_SECONDS, **replies},
    }


async def measure(admin: str) -> dict[str, Any]:
    """Each tick runs its own event loop (as a request would), so the whole part runs in a thread of its own."""
    return await asyncio.to_thread(measure_sync, admin)


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's goals for this part, as rows of `make bench`'s targets table."""
    r = section["replies"]
    checks = [
        ("long work: statements a yield adds to its tick", section["map"]["short"]["statements_per_yield"]),
        (
            "reply pipeline: duplicates, replies cut by the budget, failed",
            r["duplicates"] + r["cut_by_budget"] + r["failed"],
        ),
    ]
    return [
        {"name": n, "value": v, "measured": str(v), "goal": "≤ 0", "met": v is not None and v <= 0} for n, v in checks
    ]


def render(section: dict[str, Any]) -> str:
    imp, m, r = section["import"], section["map"], section["replies"]
    chunks = imp["rows"] // imp["chunk_rows"]
    rows = [
        (
            f"{imp['rows']:,}-row import, {chunks} job.map chunks of {imp['chunk_rows']} "
            f"({section['fake_seconds']['enrich']:g} s call each)",
            str(imp["short"]["ticks"]),
            str(imp["short"]["yields"]),
            f"{imp['short']['seconds']:.1f}",
            f"{imp['long']['seconds']:.1f}",
            f"{imp['short']['seconds'] / imp['long']['seconds']:.2f}×",
            f"{imp['short']['rows']:,} rows, {imp['short']['chunks_called_twice']} chunks twice",
        ),
        (
            f"{m['items']}-item job.map ({section['fake_seconds']['item']:g} s call each)",
            str(m["short"]["ticks"]),
            str(m["short"]["yields"]),
            f"{m['short']['seconds']:.1f}",
            f"{m['long']['seconds']:.1f}",
            f"{m['short']['seconds'] / m['long']['seconds']:.2f}×",
            f"{m['short']['items_called_twice']} items twice; a yield adds {m['short']['statements_per_yield']} "
            "statements",
        ),
    ]
    work = report.table(
        f"(e) long work under a {section['budget_seconds']:g} s budget, against the same work in one long tick",
        ("work", "ticks", "yields", "s", "one tick s", "÷", "checked"),
        rows,
    )
    replies = report.table(
        f"(f) the reply pipeline: {r['replies']} replies over {r['arrival_seconds']:g} s, a "
        f"{section['fake_seconds']['llm']:g} s LLM step, then a {section['fake_seconds']['twilio']:g} s Twilio "
        "send (at_most_once)",
        ("ticks", "yields", "done", "duplicates", "cut by the budget", "failed", "reply s median", "max"),
        [
            (
                str(r["ticks"]),
                str(r["yields"]),
                str(r["done"]),
                str(r["duplicates"]),
                str(r["cut_by_budget"]),
                str(r["failed"]),
                f"{r['reply_seconds_median']:.1f}",
                f"{r['reply_seconds_max']:.1f}",
            )
        ],
    )
    return work + "\n\n" + replies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.long_work", description=__doc__)
    parser.parse_args(argv)
    with ExitStack() as stack:
        admin = server.admin_url(stack)
        section = measure_sync(admin)
        server.drop_database(admin, "crontick_bench_long_work")
    print(render(section))
    results = json.loads(report.RESULTS.read_text()) if report.RESULTS.exists() else {}
    results["long_work"] = section
    if "targets" in results:  # this run's figures replace the last one's in the targets table
        mine = targets(section)
        names = {t["name"] for t in mine}
        results["targets"] = [t for t in results["targets"] if t["name"] not in names] + mine
    report.write(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
