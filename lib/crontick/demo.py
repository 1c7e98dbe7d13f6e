"""Demo data for `crontick dev` / `make run`: a handler and a few jobs so the first tick does work."""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from .handlers import Job, handler
from .queue import enqueue

log = logging.getLogger("crontick")


@handler("demo.greet")
def greet(payload: Any, job: Job) -> None:
    print(f"[demo.greet] job {job.id}: hello, {payload.get('name', 'world')}!", flush=True)


@handler("demo.flaky")
def flaky(payload: Any, job: Job) -> None:
    if job.attempt < 2:
        raise RuntimeError(f"demo.flaky: failing attempt {job.attempt} on purpose; it retries in about a minute")
    print(f"[demo.flaky] job {job.id}: succeeded on attempt {job.attempt}", flush=True)


def seed(url: str) -> None:
    """Add demo jobs once (keys make a second `make run` add nothing)."""
    with psycopg.connect(url, prepare_threshold=None) as conn, conn.transaction():
        for name in ("Ada", "Grace", "Linus"):
            enqueue(conn, "demo.greet", {"name": name}, key=f"demo:greet:{name}")
        enqueue(conn, "demo.flaky", {}, key="demo:flaky")
