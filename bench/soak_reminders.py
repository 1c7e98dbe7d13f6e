"""Reminder soak: many ticks in parallel every second against thousands of bookings and a provider that fails often.

    python -m bench.soak_reminders [--seconds 300] [--bookings 2000] [--ticks-per-second 20]
        [--failure-rate 0.2] [--channel email|sms] [--kill-every 20] [--time-scale 30]

The provider is a real HTTP server on 127.0.0.1. Of its calls, `failure-rate` fail: three quarters
answer 500 (a definite failure), one quarter accept the message and then answer too late for
the client (an ambiguous outcome). For email it honours Idempotency-Key as Resend does (a repeat
gets the first answer, no second delivery); Twilio-style SMS has no key, so every accepted
request is a delivery. Ticks run in worker processes; with --kill-every one is killed with
SIGKILL every N seconds and replaced. Time runs `time-scale` times faster than the wall clock
(each tick passes `now`), so bookings keep entering the 24-hour window and the whole
1/5/30-minute retry ladder is exercised. The check: no booking gets two deliveries of a kind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import psycopg

from crontick import db
from crontick.settings import Settings
from crontick.tick.pipeline import run_tick

from .server import admin_url, drop_database, fresh_database

DATABASE = "crontick_soak_reminders"
WORKERS = 4
BUDGET_SECONDS = 4.0  # real seconds per tick
SLOTS_PER_TICK = 3  # connections per tick started each second, so a slow tick does not stop the next
CLIENT_TIMEOUT_SECONDS = 0.5
HANG_SECONDS = 1.0
CANCELLED_FRACTION = 0.05


class Provider(ThreadingHTTPServer):
    """Counts calls and deliveries per idempotency key (email) or recipient (SMS)."""

    daemon_threads = True

    def __init__(self, failure_rate: float, honours_key: bool) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.failure_rate = failure_rate
        self.honours_key = honours_key
        self.lock = threading.Lock()
        self.calls: Counter[str] = Counter()  # answer kind -> count
        self.requests: Counter[str] = Counter()  # key -> requests
        self.history: dict[str, list[str]] = {}  # key -> how each request was answered, for the report
        self.deliveries: Counter[str] = Counter()  # key -> deliveries

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A killed worker resets its connections; that is part of the soak, not an error."""


class Handler(BaseHTTPRequestHandler):
    server: Provider
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        body = self.rfile.read(length)
        p = self.server
        key = message_key(self.headers.get("idempotency-key"), body, length)
        if key is None:  # cut short by a killed worker: a real provider rejects it, and nothing is sent
            with p.lock:
                p.calls["malformed"] += 1
            self._send(400, b'{"message":"incomplete request"}')
            return
        roll = random.random()
        with p.lock:
            p.requests[key] += 1
            history = p.history.setdefault(key, [])
            if roll < p.failure_rate * 0.75:
                p.calls["500"] += 1
                history.append(f"{time.time():.3f} 500")
                answer = None
            else:
                replay = p.honours_key and p.deliveries[key] > 0
                if not replay:
                    p.deliveries[key] += 1
                p.calls["replay" if replay else "delivered"] += 1
                history.append(f"{time.time():.3f} {'hang' if roll < p.failure_rate else 'ok'}")
                if roll < p.failure_rate:
                    p.calls["hang"] += 1
                answer = json.dumps({"id": key, "sid": "SM" + key})
        if answer is None:
            self._send(500, b'{"message":"internal error"}')
            return
        if roll < p.failure_rate:
            time.sleep(HANG_SECONDS)
        self._send(200, answer.encode())

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (timeout) or was killed


def message_key(idempotency_key: str | None, body: bytes, length: int) -> str | None:
    """Email: its Idempotency-Key; SMS: its recipient. None for a body cut short."""
    if len(body) < length or not body:
        return None
    if idempotency_key:
        return idempotency_key
    form = parse_qs(body.decode(errors="replace"))
    return "to:" + form["To"][0] if "To" in form and "Body" in form else None


def sim_now(t0: datetime, started: float, scale: float) -> datetime:
    return t0 + timedelta(seconds=(time.time() - started) * scale)


# Each worker writes its counts into shared memory of its own, never through a queue or a lock:
# a worker killed with SIGKILL while holding a multiprocessing lock would block the others for ever.
COUNTS = ("ticks", "sent", "failed", "unknown", "retried", "skipped", "errors")
DURATION_BUCKET_MS = 10
DURATION_BUCKETS = 1000  # up to 10 s; longer ticks count in the last bucket


def worker(
    values: dict[str, Any], t0_iso: str, started: float, scale: float, per_second: int, stop: Any, counts: Any
) -> None:
    """Every wall-clock second, start `per_second` ticks at once, each on a free connection of its own."""
    settings = Settings(**values)
    t0 = datetime.fromisoformat(t0_iso)
    logging.getLogger("crontick").setLevel(logging.ERROR)  # one log line per tick × 20 a second drowns the report

    def add(name: str, n: int = 1) -> None:
        counts[COUNTS.index(name)] += n

    async def ticking() -> None:
        conns = [await db.connect(values["database_url"]) for _ in range(per_second * SLOTS_PER_TICK)]
        busy = [False] * len(conns)

        async def one(i: int) -> None:
            busy[i] = True
            try:
                result = await run_tick(conns[i], settings, now=sim_now(t0, started, scale), source="soak")
                add("ticks")
                for name in ("sent", "failed", "unknown", "retried"):
                    add(name, getattr(result.reminders, name))
                counts[len(COUNTS) + min(result.duration_ms // DURATION_BUCKET_MS, DURATION_BUCKETS - 1)] += 1
            except Exception as exc:  # a tick error is reported, and the soak goes on like a scheduler would
                add("errors")
                print(f"tick error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            finally:
                busy[i] = False

        tasks: set[asyncio.Task[None]] = set()
        next_second = time.time()
        while not stop.value:
            free = [i for i, b in enumerate(busy) if not b]
            add("skipped", max(0, per_second - len(free)))  # every connection still runs a tick
            for i in free[:per_second]:
                task = asyncio.create_task(one(i))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            next_second += 1.0
            await asyncio.sleep(max(0.0, next_second - time.time()))
        await asyncio.gather(*tasks)

    asyncio.run(ticking())


def seed(url: str, count: int, t0: datetime, window_hours: float) -> set[int]:
    """A quarter due at once, the rest entering the 24-hour window over the soak; some cancelled."""
    rows = []
    for i in range(count):
        if i < count // 4:
            starts = t0 + timedelta(hours=random.uniform(1, 24))
        else:
            starts = t0 + timedelta(hours=24 + random.uniform(0, window_hours))
        status = "cancelled" if random.random() < CANCELLED_FRACTION else "confirmed"
        rows.append((f"Customer {i}", f"c{i}@example.com", f"+3161{i:07d}", starts, random.choice(ZONES), status))
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.executemany(
                "insert into bookings (customer_name, email, phone, starts_at, time_zone, status)"
                " values (%s, %s, %s, %s, %s, %s)",
                rows,
            )
        return {r[0] for r in conn.execute("select id from bookings where status = 'cancelled'")}


ZONES = ("Europe/Amsterdam", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "UTC", "Not/A_Zone")


def run(args: argparse.Namespace) -> dict[str, Any]:
    stack = ExitStack()
    with stack:
        admin = admin_url(stack)
        url = fresh_database(admin, DATABASE)
        stack.callback(drop_database, admin, DATABASE)
        asyncio.run(db.migrate(url))
        t0 = datetime.now(UTC).replace(microsecond=0)
        window_hours = args.seconds * args.time_scale / 3600 * 0.9
        cancelled = seed(url, args.bookings, t0, window_hours)

        provider = Provider(args.failure_rate, honours_key=args.channel == "email")
        threading.Thread(target=provider.serve_forever, daemon=True).start()
        stack.callback(provider.shutdown)
        values = settings_values(url, provider.url, args)

        ctx = multiprocessing.get_context("spawn")
        stop = ctx.RawValue("b", 0)
        started = time.time()
        per_worker = max(1, args.ticks_per_second // WORKERS)
        all_counts: list[Any] = []

        def spawn() -> multiprocessing.process.BaseProcess:
            counts = ctx.RawArray("q", len(COUNTS) + DURATION_BUCKETS)
            all_counts.append(counts)
            worker_args = (values, t0.isoformat(), started, args.time_scale, per_worker, stop, counts)
            return ctx.Process(target=worker, args=worker_args)

        procs = [spawn() for _ in range(WORKERS)]
        for p in procs:
            p.start()
        kills = 0
        next_kill = time.time() + args.kill_every if args.kill_every else float("inf")
        end = started + args.seconds
        while time.time() < end:
            time.sleep(max(0.0, min(end, next_kill) - time.time()))
            if time.time() >= next_kill:
                victim = random.randrange(len(procs))
                os.kill(procs[victim].pid or 0, signal.SIGKILL)
                procs[victim].join()
                procs[victim] = spawn()
                procs[victim].start()
                kills += 1
                next_kill += args.kill_every
        stop.value = 1
        for p in procs:
            p.join()
        totals = Counter({name: sum(c[i] for c in all_counts) for i, name in enumerate(COUNTS)})
        histogram = [sum(c[len(COUNTS) + b] for c in all_counts) for b in range(DURATION_BUCKETS)]
        soak_seconds = time.time() - started
        provider.failure_rate = 0.0
        final = finish(url, values, sim_now(t0, started, args.time_scale))
        return report(args, provider, cancelled, totals, histogram, kills, soak_seconds, final, url)


def settings_values(url: str, provider_url: str, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "database_url": url,
        "reminder_channel": args.channel,
        "batch_size": 100,
        "concurrency": 10,
        "time_budget_seconds": BUDGET_SECONDS,
        # The lease is in simulated seconds: it must outlast a live tick's real budget at this speed.
        "lease_seconds": (BUDGET_SECONDS * 2) * args.time_scale,
        "delivery_timeout_seconds": CLIENT_TIMEOUT_SECONDS,
        "email_api_url": provider_url,
        "email_api_key": "re_soak",
        "email_from": "soak@example.com",
        "twilio_api_url": provider_url,
        "twilio_account_sid": "AC" + "0" * 32,
        "twilio_auth_token": "soak-token",
        "sms_from": "+15005550006",
    }


def finish(url: str, values: dict[str, Any], now: datetime) -> dict[str, int]:
    """With the provider healthy, tick on (time moving 10 minutes a tick) until no retry is pending."""
    settings = Settings(**{**values, "lease_seconds": 60.0, "time_budget_seconds": 5.0})

    async def go() -> int:
        conn = await db.connect(url)
        try:
            for n in range(60):
                await run_tick(conn, settings, now=now + timedelta(minutes=10 * n), source="soak-finish")
                cur = await conn.execute(
                    "select count(*) from reminder_sends where status = 'sending' or next_attempt_at is not null"
                )
                row = await cur.fetchone()
                if row and row[0] == 0:
                    return n + 1
            return -1
        finally:
            await conn.close()

    ticks = asyncio.run(go())
    with psycopg.connect(url) as conn:
        statuses: dict[str, int] = dict(
            conn.execute("select status, count(*) from reminder_sends group by status").fetchall()
        )
    return {"finishing_ticks": ticks, **{f"rows_{k}": v for k, v in statuses.items()}}


def report(
    args: argparse.Namespace,
    provider: Provider,
    cancelled: set[int],
    totals: Counter[str],
    histogram: list[int],
    kills: int,
    seconds: float,
    final: dict[str, int],
    url: str,
) -> dict[str, Any]:
    double = {k: n for k, n in provider.deliveries.items() if n > 1}
    with psycopg.connect(url) as conn:
        attempts: dict[str, int] = dict(conn.execute("select idempotency_key, attempts from reminder_sends").fetchall())
        phones: dict[str, int] = dict(
            conn.execute(
                "select 'to:' || b.phone, r.attempts from reminder_sends r join bookings b on b.id::text = r.booking_id"
            ).fetchall()
        )
    # Each request must belong to an attempt some tick claimed: more requests than attempts for a
    # key would mean two ticks sent the same claim.
    over = [k for k, n in provider.requests.items() if n > (attempts.get(k) or phones.get(k) or 0)]
    with psycopg.connect(url) as conn:
        examples = [
            {
                "key": k,
                "answers": provider.history[k],
                "row": conn.execute(
                    "select r.status, r.attempts, r.maybe_delivered, r.created_at, r.updated_at, r.last_error from reminder_sends r"
                    " join bookings b on b.id::text = r.booking_id where r.idempotency_key = %s or 'to:' || b.phone = %s",
                    (k, k),
                ).fetchall(),
            }
            for k in over[:5]
        ]
    cancelled_keys = {f"reminder:{b}:24h" for b in cancelled} | {f"to:+3161{b - 1:07d}" for b in cancelled}
    with psycopg.connect(url) as conn:
        sent_rows = conn.execute("select count(*) from reminder_sends where status = 'sent'").fetchone()
    return {
        "command": f"python -m bench.soak_reminders --seconds {args.seconds} --bookings {args.bookings} "
        f"--ticks-per-second {args.ticks_per_second} --failure-rate {args.failure_rate} "
        f"--channel {args.channel} --kill-every {args.kill_every} --time-scale {args.time_scale}",
        "wall_seconds": round(seconds, 1),
        "ticks": totals["ticks"],
        "ticks_per_second": round(totals["ticks"] / seconds, 1),
        "ticks_skipped_busy": totals["skipped"],
        "tick_errors": totals["errors"],  # each one is printed to stderr
        "tick_ms_p50_p95_max": quantiles(histogram),
        "workers_killed": kills,
        "provider_calls": dict(provider.calls),
        "deliveries": sum(provider.deliveries.values()),
        "bookings_delivered": len(provider.deliveries),
        "double_deliveries": len(double),
        "requests_per_key_max": max(provider.requests.values(), default=0),
        "keys_with_more_requests_than_claimed_attempts": len(over),
        "examples_of_such_keys": [json.loads(json.dumps(e, default=str)) for e in examples],
        "cancelled_delivered": len(cancelled_keys & set(provider.deliveries)),
        "sent_rows": sent_rows[0] if sent_rows else 0,
        # As the soak's ticks reported them (a killed worker's last second is lost; the finish is not counted).
        "reminders_counted_by_ticks": {k: totals[k] for k in ("sent", "retried", "failed", "unknown")},
        **final,
    }


def quantiles(histogram: list[int]) -> list[int]:
    """p50, p95 and max tick duration in ms, to the bucket (10 ms)."""
    total = sum(histogram)
    if not total:
        return []
    marks, seen = (0.5 * total, 0.95 * total), 0
    found: list[int] = []
    for bucket, n in enumerate(histogram):
        seen += n
        while len(found) < len(marks) and seen >= marks[len(found)]:
            found.append((bucket + 1) * DURATION_BUCKET_MS)
    last = max(b for b, n in enumerate(histogram) if n)
    return [*found, (last + 1) * DURATION_BUCKET_MS]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=300)
    p.add_argument("--bookings", type=int, default=2000)
    p.add_argument("--ticks-per-second", type=int, default=20)
    p.add_argument("--failure-rate", type=float, default=0.2)
    p.add_argument("--channel", choices=("email", "sms"), default="email")
    p.add_argument("--kill-every", type=float, default=20, help="SIGKILL a worker every N seconds (0: never)")
    p.add_argument("--time-scale", type=float, default=30)
    logging.getLogger("crontick").setLevel(logging.ERROR)
    result = run(p.parse_args())
    print(json.dumps(result, indent=2))
    ok = not (
        result["double_deliveries"]
        or result["cancelled_delivered"]
        or result["keys_with_more_requests_than_claimed_attempts"]
    )
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
