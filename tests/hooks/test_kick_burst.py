"""A burst of 500 signed Twilio webhooks from 16 concurrent clients, half of them redeliveries, on `crontick serve`."""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.support.hooks import twilio_form, twilio_request
from tests.support.waiting import wait_until

EVENTS = 250
CLIENTS = 16
TWILIO_DEADLINE_SECONDS = 15.0


async def fire(base: str, requests: list[tuple[str, bytes, dict[str, str]]]) -> list[tuple[int, float]]:
    queue: asyncio.Queue[tuple[str, bytes, dict[str, str]]] = asyncio.Queue()
    for r in requests:
        queue.put_nowait(r)
    results: list[tuple[int, float]] = []

    async def client() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=TWILIO_DEADLINE_SECONDS) as c:
            while not queue.empty():
                path, body, headers = queue.get_nowait()
                began = time.perf_counter()
                response = await c.post(path, content=body, headers=headers)
                results.append((response.status_code, time.perf_counter() - began))

    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    return results


@pytest.mark.slow
def test_burst_makes_exactly_one_job_per_event_each_run_once_with_few_ticks(
    served: tuple[str, Path],
    conn: psycopg.Connection[Any],
) -> None:
    base, log = served
    requests = [twilio_request(twilio_form(f"SMburst{n:03d}"), hook="wa") for n in range(EVENTS)] * 2
    random.Random(7).shuffle(requests)
    began = time.perf_counter()
    results = asyncio.run(fire(base, requests))
    burst_seconds = time.perf_counter() - began
    assert [status for status, _ in results] == [200] * 2 * EVENTS

    def lines() -> list[dict[str, Any]]:
        return [json.loads(line) for line in log.read_text().splitlines()]

    wait_until(lambda: len(lines()) >= EVENTS, timeout=30)
    time.sleep(0.5)  # a second run of any job would show up here
    runs = lines()
    assert conn.execute("select count(*) from jobs").fetchone() == (EVENTS,)
    assert conn.execute("select count(*) from crontick_inbound_events").fetchone() == (EVENTS,)
    assert sorted(r["event_id"] for r in runs) == sorted(
        f"SMburst{n:03d}" for n in range(EVENTS)
    )  # each ran exactly once
    assert conn.execute("select count(*) from jobs where status = 'done'").fetchone() == (EVENTS,)
    ticks = conn.execute("select count(*) from crontick_ticks").fetchone()[0]  # type: ignore[index]
    latencies = sorted(seconds for _, seconds in results)
    p50, p99 = statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]
    print(
        f"\nburst: {2 * EVENTS} webhooks ({EVENTS} distinct) from {CLIENTS} clients in {burst_seconds:.2f} s; "
        f"answer p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms; "
        f"{ticks} ticks ran {EVENTS} jobs",
        file=sys.stderr,
    )
    assert latencies[-1] < TWILIO_DEADLINE_SECONDS
    # Coalesced: one tick at most every MIN_KICK_INTERVAL_SECONDS while the burst lasts, plus the tail.
    assert ticks <= burst_seconds / 0.25 + 3, ticks
