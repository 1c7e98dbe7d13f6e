"""`crontick serve` as a real separate process, so its memory and its log can be measured from outside."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.constants import ROOT
from tests.support.run_cli import CRONTICK, cli_env
from tests.support.servers import free_port, stop


@contextmanager
def served(database_url: str, **env: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Serve the app on a free loopback port; yields (base URL, process). Stopped with SIGTERM, then waited."""
    port = free_port()
    proc = subprocess.Popen(
        [str(CRONTICK), "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=cli_env(database_url, **env),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base + "/api/health", timeout=1)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"crontick serve did not start: {proc.stderr.read() if proc.stderr else ''!r}"
                    ) from None
                time.sleep(0.05)
        yield base, proc
    finally:
        stop(proc)


def rss_bytes(pid: int) -> int:
    """Resident memory of a process now (Linux /proc; the suite runs on Linux and macOS CI is not required)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"expected VmRSS in /proc/{pid}/status")


def peak_rss_bytes(pid: int) -> int:
    """The high-water mark of resident memory (VmHWM): a spike that was freed again still shows."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"expected VmHWM in /proc/{pid}/status")
