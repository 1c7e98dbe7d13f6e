"""`make bench`, a simulated day (issue 35): a salon's day, time compressed, driven once by a fixed 15-minute
schedule and once by the waker (CRONTICK_WAKER=qstash through the QStash stand-in) with a daily safety net.

Both runs use the same database (emptied between them) and the same day: bookings whose 24 h and 2 h
reminders fall due through the day, a nightly report, bursts of WhatsApp messages whose debounced
replies go out after the burst, and a few replies that fail once and are retried a minute later.
Time is compressed as an app's own tests do it: crontick.testing.advance moves every stored time back
(the database's clock is never touched), and the stand-in's pending Not-Before moves with it, so a
day takes as long as its ticks. The app runs on uvicorn and is called over real HTTP: by the fixed
schedule with its bearer secret, by the stand-in's signed deliveries, and once after each inbound
message (the prompt start an inbound hook makes; not a wake-up, the host is already up).

Lateness is due → started, in seconds: for a job attempt, the tick that claims it minus its run_after
(read just before each tick); for a reminder, when its send was claimed minus starts_at − lead.
The nightly report is a job due at 02:00 rather than a declared schedule: a schedule's slots follow
cron on the database's real clock, which this compressed day does not move (bench/schedules.py
measures schedules). Also measured on the wire (tests/support/wire.py): what a booking adds to a
tick's statements and HTTP calls, and what a tick that books nothing costs with a waker and without.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import math
import random
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
from psycopg import sql

import crontick
from crontick import db, testing
from crontick.app import create_app
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.credentials import QSTASH_CURRENT, QSTASH_NEXT
from tests.support.qstash_server import QStashStandIn, qstash_stand_in
from tests.support.servers import free_port, serve

from . import report, server
from .report import table

DAY_SECONDS = 86_400
FIXED_INTERVAL_SECONDS = 900  # the README's GitHub schedule: 96 calls a day
SAFETY_NET_AT_SECONDS = 0  # the waker's daily safety net calls once, as the day begins
REMINDER_KINDS = ("24h", "2h")
BOOKINGS_PER_DAY = 12  # today's (their 2 h reminders fall today) and as many tomorrow (their 24 h ones do)
NIGHTLY_REPORT_AT_SECONDS = 2 * 3600
BURSTS = 12  # WhatsApp conversations through the opening hours
MESSAGES_PER_BURST = (2, 5)
MESSAGE_GAP_SECONDS = (1.0, 4.0)
DEBOUNCE_SECONDS, DEBOUNCE_MAX_SECONDS = 10.0, 60.0  # a reply waits for a quiet 10 s, a minute at most
FAIL_ONCE_EVERY = 4  # every 4th conversation's reply fails its first attempt (a provider's 503)
REPLY_TYPE, REPORT_TYPE = "bench_salon_reply", "bench_salon_nightly_report"
TOKEN = "qstash-token-for-the-simulated-day"
SEED = 35
# The tables one run leaves rows in, emptied before the next (the same database for both runs).
TABLES = ("jobs", "job_attempts", "bookings", "reminder_sends", "crontick_wakeups", "crontick_ticks",
          "crontick_token_uses", "crontick_alerts")  # fmt: skip
GOAL_P95_LATENESS_SECONDS = 5.0


@crontick.handler(REPLY_TYPE)
async def reply(payload: dict[str, Any], job: crontick.Job) -> None:
    """A debounced WhatsApp reply; some fail once, as a provider's 503 would."""
    if payload.get("fail_once") and job.attempt == 1:
        raise RuntimeError("the WhatsApp provider answered 503")


@crontick.handler(REPORT_TYPE)
async def nightly_report(payload: dict[str, Any], job: crontick.Job) -> None:
    """The salon's nightly report (its work is not what is measured)."""


def day_plan(seed: int = SEED) -> list[tuple[float, str, dict[str, Any]]]:
    """The day's inbound messages as (second of the day, conversation key, payload), the same for both runs."""
    rng = random.Random(seed)
    messages = []
    for burst in range(BURSTS):
        at = rng.uniform(8 * 3600, 21 * 3600)
        for n in range(rng.randint(*MESSAGES_PER_BURST)):
            messages.append((at, f"chat-{burst}", {"burst": burst, "n": n, "fail_once": burst % FAIL_ONCE_EVERY == 0}))
            at += rng.uniform(*MESSAGE_GAP_SECONDS)
    return sorted(messages, key=lambda m: m[0])


def prepare(conn: psycopg.Connection[Any], seed: int = SEED) -> None:
    """Empty the run's tables and lay out the day: bookings, the 24 h reminders of today's bookings already
    sent yesterday, and the nightly report's job."""
    for name in TABLES:
        conn.execute(sql.SQL("truncate {} cascade").format(sql.Identifier("crontick", name)))
    rng = random.Random(seed + 1)
    with conn.transaction():
        for day in (0, 1):
            for n in range(BOOKINGS_PER_DAY):
                starts = day * DAY_SECONDS + 9 * 3600 + n * 45 * 60 + rng.randint(0, 30) * 60
                row = conn.execute(
                    "insert into crontick.bookings (customer_name, phone, starts_at, created_at)"
                    " values (%s, %s, now() + make_interval(secs => %s), now() - interval '2 days') returning id",
                    (f"client {day}-{n}", f"+3161000{day}{n:03d}", starts),
                ).fetchone()
                assert row is not None
                if day == 0:  # its 24 h reminder went out yesterday
                    conn.execute(
                        "insert into crontick.reminder_sends (booking_id, kind, channel, status, sent_at, locked_until,"
                        " created_at) values (%s, '24h', 'console', 'sent', now() - interval '1 day',"
                        " now() - interval '1 day', now() - interval '1 day')",
                        (str(row[0]),),
                    )
        now = conn.execute("select now()").fetchone()
        assert now is not None
        crontick.enqueue(conn, REPORT_TYPE, {}, run_after=now[0] + timedelta(seconds=NIGHTLY_REPORT_AT_SECONDS),
                         key="nightly-report")  # fmt: skip


class Day:
    """One simulated day against the app at `base`: the clock, what was due at each tick, and the counts."""

    def __init__(self, conn: psycopg.Connection[Any], base: str, stand_in: QStashStandIn | None) -> None:
        self.conn, self.base, self.stand_in = conn, base, stand_in
        self.began = time.time()
        self.moved = 0.0  # seconds advanced so far
        self.due: dict[tuple[int, int], float] = {}  # (job id, attempt) -> lateness when its tick began
        self.due_seconds: set[int] = set()  # the distinct seconds of the day at which a job attempt was due
        self.wakeups = 0
        self.wakeups_idle = 0  # wake-ups whose tick found nothing due (a booking superseded by a later one)
        self.deliveries = 0  # wake-ups delivered by the stand-in
        self.kicks = 0
        self.client = httpx.Client(timeout=30)

    def elapsed(self) -> float:
        return time.time() - self.began + self.moved

    def move_to(self, second: float) -> None:
        """Advance the database and the stand-in to `second` of the day, by whole seconds (so a booked instant
        stays on the providers' one-second grid, and its deduplication id with it)."""
        step = math.ceil(second - self.elapsed())
        if step > 0:
            testing.advance(self.conn, step)
            if self.stand_in is not None:
                self.stand_in.advance(step)
            self.moved += step

    def note_due(self) -> int:
        """Record the lateness of each job attempt due now (the next tick claims it); returns how many."""
        rows = self.conn.execute(
            "select id, attempts + 1, extract(epoch from now() - run_after)::float8,"
            " extract(epoch from now() - run_after)::float8 from crontick.jobs"
            " where status = 'pending' and not held and run_after <= now()"
        ).fetchall()
        self.note(rows)
        return len(rows) + self.reminders_due()

    def note(self, rows: list[tuple[int, int, float, float]]) -> None:
        """Each (job id, attempt, seconds late, seconds since it was due): its lateness and the second of the day
        it was due."""
        now = self.elapsed()
        for job_id, attempt, late, ago in rows:
            self.due[job_id, attempt] = late
            self.due_seconds.add(math.floor(now - ago))

    def note_last_attempts(self) -> None:
        """The last attempt of each job, from its row (the claim sets started_at and leaves run_after): this
        includes the jobs a tick ran in its follow-up, within its budget, which no call came for."""
        rows = self.conn.execute(
            "select id, attempts, extract(epoch from started_at - run_after)::float8,"
            " extract(epoch from now() - run_after)::float8 from crontick.jobs where started_at is not null"
        ).fetchall()
        self.note(rows)

    def reminders_due(self) -> int:
        row = self.conn.execute(
            "select count(*) from crontick.bookings b cross join (values ('24h', interval '24 hours'),"
            " ('2h', interval '2 hours')) k(kind, lead) where b.starts_at - k.lead <= now()"
            " and b.starts_at > now() and not exists (select 1 from crontick.reminder_sends r"
            " where r.booking_id = b.id::text and r.kind = k.kind)"
        ).fetchone()
        return int(row[0]) if row else 0

    def tick(self) -> None:
        """A call with the bearer secret: the fixed schedule's, the safety net's or an inbound hook's kick."""
        self.note_due()
        answer = self.client.post(f"{self.base}/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"})
        answer.raise_for_status()

    def deliver(self) -> None:
        """The stand-in's earliest pending delivery, signed as QStash signs it: one wake-up."""
        assert self.stand_in is not None
        delivery = self.stand_in.pending()[0]
        self.wakeups += 1
        self.deliveries += 1
        self.wakeups_idle += not self.note_due()
        self.stand_in.deliver(delivery)
        if delivery.delivered_at is None:
            raise RuntimeError(f"the tick refused a signed delivery: {delivery.statuses}")

    def message(self, key: str, payload: dict[str, Any]) -> None:
        """An inbound WhatsApp message: its reply enqueued, debounced per conversation, then the hook's kick."""
        debounce = crontick.Debounce(key, DEBOUNCE_SECONDS, max_seconds=DEBOUNCE_MAX_SECONDS)
        with self.conn.transaction():
            crontick.enqueue(self.conn, REPLY_TYPE, payload, debounce=debounce)
        self.kicks += 1
        self.tick()


def run_day(conn: psycopg.Connection[Any], base: str, stand_in: QStashStandIn | None) -> dict[str, Any]:
    """One day: with `stand_in`, the waker's (a safety net call as it begins, then the stand-in's deliveries);
    without, the fixed schedule's 96 calls. Inbound messages kick in both."""
    day = Day(conn, base, stand_in)
    plan = day_plan()
    calls = [SAFETY_NET_AT_SECONDS] if stand_in else list(range(0, DAY_SECONDS, FIXED_INTERVAL_SECONDS))
    while True:
        pending = stand_in.pending() if stand_in else []
        delivery_at = pending[0].due_at - time.time() + day.elapsed() if pending else math.inf
        nexts = [(calls[0] if calls else math.inf, 0), (plan[0][0] if plan else math.inf, 1), (delivery_at, 2)]
        at, what = min(nexts)
        if at >= DAY_SECONDS:
            break
        day.move_to(at)
        if what == 0:
            calls.pop(0)
            day.wakeups += 1
            day.tick()
        elif what == 1:
            _, key, payload = plan.pop(0)
            day.message(key, payload)
        else:
            day.deliver()
    day.client.close()
    return summarise(day)


def summarise(day: Day) -> dict[str, Any]:
    """The day's counts and lateness (median, p95, max in seconds) for jobs, reminders and both."""
    day.note_last_attempts()
    rows = day.conn.execute(
        "select extract(epoch from r.created_at - (b.starts_at - k.lead))::float8,"
        " extract(epoch from (b.starts_at - k.lead) - now())::float8"
        " from crontick.reminder_sends r join crontick.bookings b on r.booking_id = b.id::text"
        " join (values ('24h', interval '24 hours'), ('2h', interval '2 hours')) k(kind, lead) on k.kind = r.kind"
        " where r.created_at > b.created_at + interval '36 hours'"  # not the ones laid out as sent yesterday
    ).fetchall()
    now = day.elapsed()
    reminders = [late for late, _ in rows]
    due_seconds = day.due_seconds | {math.floor(now + ahead) for _, ahead in rows}
    left = day.conn.execute(
        "select count(*) from crontick.jobs where status in ('pending', 'running') and run_after <= now()"
    ).fetchone()
    missed = day.conn.execute(
        "select count(*) from crontick.bookings b cross join (values ('24h', interval '24 hours'),"
        " ('2h', interval '2 hours')) k(kind, lead) where b.starts_at - k.lead between now() - make_interval(secs => %s)"
        " and now() and not exists (select 1 from crontick.reminder_sends r where r.booking_id = b.id::text"
        " and r.kind = k.kind)",
        (now,),
    ).fetchone()
    served = day.conn.execute("select count(*) from crontick.crontick_wakeups where served_at is not null").fetchone()
    jobs = list(day.due.values())
    return {
        "wakeups": day.wakeups,
        "wakeups_finding_nothing_due": day.wakeups_idle,
        "kicks": day.kicks,
        "due_seconds": len(due_seconds),
        "job_attempts": len(jobs),
        "reminders": len(reminders),
        "left_due": int(left[0]) if left else 0,
        "reminders_not_sent": int(missed[0]) if missed else 0,
        "deliveries": day.deliveries,
        "deliveries_served": int(served[0]) if served else 0,  # matched to their booking, so marked served
        "jobs": spread(jobs),
        "reminders_lateness": spread(reminders),
        "all": spread(jobs + reminders),
        "day_wall_seconds": round(time.time() - day.began, 1),
    }


def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {"median": math.nan, "p95": math.nan, "max": math.nan}
    ordered = sorted(max(v, 0.0) for v in values)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {"median": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def settings_for(url: str, port: int, stand_in: QStashStandIn | None) -> Settings:
    common: dict[str, Any] = {"database_url": url, "cron_secret": TEST_SECRET, "reminder_kinds": REMINDER_KINDS,
                              "reminder_channel": "console", "kick": "off", "public_url": f"http://127.0.0.1:{port}",
                              "qstash_current_signing_key": QSTASH_CURRENT, "qstash_next_signing_key": QSTASH_NEXT}  # fmt: skip
    if stand_in is None:
        return Settings(**common)
    return Settings(**common, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url)


@contextmanager
def app_at(url: str, stand_in: QStashStandIn | None) -> Iterator[str]:
    port = free_port()
    with serve(create_app(settings_for(url, port, stand_in)), port=port) as base:
        yield base


def days(url: str) -> dict[str, Any]:
    """The two runs of the day on database `url`: the fixed schedule's, then the waker's."""
    out = {}
    quiet = logging.getLogger("crontick")
    level, quiet.level = quiet.level, logging.WARNING  # a line per tick would bury the report
    with psycopg.connect(url, autocommit=True) as conn, contextlib.redirect_stdout(io.StringIO()):
        prepare(conn)
        with app_at(url, None) as base:
            out["fixed"] = run_day(conn, base, None)
        prepare(conn)
        with qstash_stand_in(TOKEN, QSTASH_CURRENT, held=True) as stand_in, app_at(url, stand_in) as base:
            out["waker"] = run_day(conn, base, stand_in)
            out["waker"]["published"] = len(stand_in.published)
    quiet.setLevel(level)
    return out


def measure(admin: str) -> dict[str, Any]:
    """Both days and the statement counts, on a database of their own."""
    from . import wakeup_wire

    url = server.fresh_database(admin, "crontick_bench_wakeup_day")
    asyncio.run(db.migrate(url))
    result: dict[str, Any] = {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"), **days(url)}
    result["wire"] = wakeup_wire.measure(url)
    server.drop_database(admin, "crontick_bench_wakeup_day")
    return result


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The day's goals (issue 35) as rows of the targets table."""
    waker, fixed = result["waker"], result["fixed"]
    return [
        report.target("simulated day: waker's wake-ups − (distinct due seconds + 1)",
                      waker["wakeups"] - waker["due_seconds"] - 1, 0, "≤"),
        report.target("simulated day: waker's p95 lateness, due → started (s)", waker["all"]["p95"],
                      GOAL_P95_LATENESS_SECONDS, "≤"),
        report.target("simulated day: waker's wake-ups ÷ the fixed schedule's", waker["wakeups"] / fixed["wakeups"],
                      1.0, "≤"),
        report.target("simulated day: deliveries that matched no booking", waker["deliveries"]
                      - waker["deliveries_served"], 0, "≤"),
        report.target("a tick's statements added by a booking", result["wire"]["most_added_statements"], 1, "≤"),
        report.target("a tick's HTTP calls added by a booking", result["wire"]["most_http_calls"], 1, "≤"),
    ]  # fmt: skip


def render(result: dict[str, Any]) -> str:
    """The report's tables."""
    runs = [
        ("fixed 15-minute schedule", result["fixed"]),
        ("waker (QStash stand-in) + daily safety net", result["waker"]),
    ]
    rows = []
    for name, r in runs:
        rows.append((name, str(r["wakeups"]), str(r["due_seconds"]), str(r["kicks"]),
                     *(_lateness(r[k]) for k in ("jobs", "reminders_lateness", "all")), str(r["left_due"]),
                     str(r["reminders_not_sent"])))  # fmt: skip
    day = table(
        "a simulated day (a salon): wake-ups and lateness, due → started, seconds: median / p95 / max",
        ("driven by", "wake-ups", "due seconds", "kicks", "jobs", "reminders", "all", "jobs left", "reminders lost"),
        rows,
    )
    waker = result["waker"]
    notes = (
        f"waker: {waker['job_attempts']} job attempts, {waker['reminders']} reminders sent, "
        f"{waker['wakeups_finding_nothing_due']} wake-ups found nothing due (a debounced reply's booking "
        "superseded by a later message's); kicks: one tick per inbound message (not a wake-up); "
        f"{waker['deliveries_served']} of {waker['deliveries']} deliveries matched their booking and marked it served"
    )
    from .wakeup_wire import render as render_wire

    return "\n".join([day, notes, "", render_wire(result["wire"])])


def _lateness(s: dict[str, float]) -> str:
    return f"{s['median']:.1f} / {s['p95']:.1f} / {s['max']:.1f}"


def main() -> None:
    """`python -m bench.wakeup_day [URL]`: this section alone, merged into bench/results/latest.json."""
    import json
    import os

    with ExitStack() as stack:
        if len(sys.argv) > 1:
            os.environ[server.URL_VARIABLE] = sys.argv[1]
        admin = server.admin_url(stack)
        result = measure(admin)
    print(render(result))
    if report.RESULTS.exists():
        results = json.loads(report.RESULTS.read_text(encoding="utf-8"))
        results["wakeup_day"] = result
        ours = {t["name"] for t in targets(result)}
        results["targets"] = [t for t in results["targets"] if t["name"] not in ours] + targets(result)
        report.write(results)
        print(f"\nwritten: {report.RESULTS} (wakeup_day)")


if __name__ == "__main__":
    main()
