"""Drain over real HTTP: crontick's app under uvicorn on loopback, called by 1 or more callers."""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.constants import ROOT
from tests.support.servers import free_port

from .noop import HANDLER_MODULE
from .seen import PATH_VARIABLE

SECRET = "bench-secret-" + "x" * 32
START_TIMEOUT_SECONDS = 30.0


@contextmanager
def server(
    url: str,
    seen_file: Path,
    *,
    batch_size: int = 100,
    workers: int = 1,
    extra_env: Mapping[str, str] | None = None,
    root: Path = ROOT,
    python: str = sys.executable,
) -> Iterator[str]:
    """`uvicorn crontick.app:app` in a subprocess, configured only through the environment (plus `extra_env`).

    `root` and `python`: another checkout and its venv (bench.idle runs the old code beside the new).
    """
    port = free_port()
    env = {
        **os.environ,
        "CRONTICK_BATCH_SIZE": str(batch_size),
        "DATABASE_URL": url,
        "CRON_SECRET": SECRET,
        "CRONTICK_HANDLERS": HANDLER_MODULE,
        PATH_VARIABLE: str(seen_file),
        **(extra_env or {}),
    }
    command = [
        python,
        "-m",
        "uvicorn",
        "crontick.app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--loop",
        "asyncio",
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    log_file = seen_file.with_name("uvicorn.log")  # one JSON line per tick: kept out of the table
    with log_file.open("wb") as log:
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(base, proc, log_file)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_until_up(base: str, proc: subprocess.Popen[bytes], log_file: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_file.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"expected uvicorn to start, got exit code {proc.returncode}: {tail}")
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"expected uvicorn to answer /api/health within {START_TIMEOUT_SECONDS:.0f} s")


async def drain(base: str, jobs: int, callers: int) -> float:
    """POST /api/cron/tick from `callers` concurrent clients until none finds work; returns seconds."""
    headers = {"Authorization": f"Bearer {SECRET}"}
    succeeded = 0

    async def caller(client: httpx.AsyncClient) -> None:
        nonlocal succeeded
        while True:
            response = await client.post(f"{base}/api/cron/tick", headers=headers)
            if response.status_code != 200:
                raise RuntimeError(f"expected 200 from the tick, got {response.status_code}: {response.text}")
            summary = response.json()
            succeeded += summary["jobs"]["succeeded"]
            if not summary["more"] and summary["jobs"]["claimed"] == 0:
                return

    limits = httpx.Limits(max_connections=callers, max_keepalive_connections=callers)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        began = time.perf_counter()
        await asyncio.gather(*(caller(client) for _ in range(callers)))
        seconds = time.perf_counter() - began
    if succeeded != jobs:
        raise RuntimeError(f"HTTP drain: expected {jobs} jobs to succeed, got: {succeeded}")
    return seconds


async def idle_latency(base: str, requests: int) -> dict[str, Any]:
    """Median latency of a tick that finds nothing due and of GET /api/health, interleaved on one keep-alive connection."""
    headers = {"Authorization": f"Bearer {SECRET}"}
    tick: list[float] = []
    health: list[float] = []
    async with httpx.AsyncClient(timeout=30) as client:
        for i in range(requests + 20):  # the first 20 of each warm the connection and the server
            began = time.perf_counter()
            response = await client.post(f"{base}/api/cron/tick", headers=headers)
            ticked = time.perf_counter()
            summary = response.json()
            if response.status_code != 200 or summary["jobs"]["claimed"] or summary["more"]:
                raise RuntimeError(f"expected an idle tick, got {response.status_code}: {response.text}")
            checked = await client.get(f"{base}/api/health")
            done = time.perf_counter()
            if checked.status_code != 200:
                raise RuntimeError(f"expected 200 from /api/health, got {checked.status_code}: {checked.text}")
            if i >= 20:
                tick.append(ticked - began)
                health.append(done - ticked)
    tick_ms, health_ms = statistics.median(tick) * 1000, statistics.median(health) * 1000
    return {
        "requests": requests,
        "tick_ms": round(tick_ms, 3),
        "health_ms": round(health_ms, 3),
        "ratio": round(tick_ms / health_ms, 2),
    }
