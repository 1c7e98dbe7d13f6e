"""Ticking over HTTP until nothing is left, and counting what ran: the helpers the load and fault scenarios share."""

from __future__ import annotations

import threading
import time

import httpx

from .rig import SECRET, Rig

TICK = "/api/cron/tick"


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


def tick(client: httpx.Client, base: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return client.post(base + TICK, headers=headers or bearer(SECRET))


def seed(rig: Rig, jobs: int, bookings: int) -> None:
    rig.sql(
        "insert into jobs (type, payload) select 'chaos.record', jsonb_build_object('n', n) from generate_series(1, %s) n",
        (jobs,),
    )
    rig.sql(
        "insert into bookings (customer_name, email, phone, starts_at) select 'Ada ' || n, 'ada' || n || '@example.com', "
        "'+3161234' || lpad(n::text, 4, '0'), now() + interval '1 hour' + n * interval '1 second' "
        "from generate_series(1, %s) n",
        (bookings,),
    )


def drain(base: str, callers: int, deadline_seconds: float) -> list[float]:
    """`callers` threads tick until a tick says nothing is left; returns every tick's latency in ms."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + deadline_seconds

    def caller() -> None:
        with httpx.Client(timeout=60) as client:
            while time.monotonic() < stop_at:
                began = time.monotonic()
                try:
                    r = tick(client, base)
                except httpx.TransportError:
                    continue
                with lock:
                    latencies.append((time.monotonic() - began) * 1000)
                if r.status_code == 200 and not r.json()["more"]:
                    return

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def drain_all(rig: Rig, base: str, callers: int, deadline_seconds: float) -> list[float]:
    """Drain until no job is pending or running. A caller stops when its tick finds nothing due, while
    another caller's tick may still hand jobs back (stopped at its budget, or retried with backoff);
    each round moves those back to due (faking the wait), at most 10 rounds."""
    latencies: list[float] = []
    for _ in range(10):
        latencies += drain(base, callers, deadline_seconds)
        if not rig.sql("update jobs set run_after = now() where status = 'pending' returning id"):
            break
    return latencies


def counts(rig: Rig, jobs: int, bookings: int, job_type: str = "chaos.record") -> tuple[int, int, int, int]:
    """(jobs lost, jobs run twice, reminders lost, reminders sent twice), from side effects and the provider."""
    runs = dict(
        rig.sql(
            "select j.id, count(s.job_id) from jobs j left join chaos_side_effects s on s.job_id = j.id "
            "where j.type = %s group by j.id",
            (job_type,),
        )
    )
    ids = [row[0] for row in rig.sql("select id from bookings")]
    sends = rig.provider.sends
    return (
        sum(1 for n in runs.values() if n == 0) + max(0, jobs - len(runs)),
        sum(1 for n in runs.values() if n > 1),
        sum(1 for b in ids if sends[b] == 0) + max(0, bookings - len(ids)),
        sum(1 for b in ids if sends[b] > 1),
    )
