"""Fixtures for the prompt-start tests: `crontick serve` in its own process, with a handler that logs its start."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.constants import PYTHONPATH, ROOT, TEST_SECRET
from tests.support.databases import url_of
from tests.support.hooks import TWILIO_TOKEN
from tests.support.servers import free_port
from tests.support.waiting import wait_until


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`crontick serve` in its own process, as on Cloud Run or a VM; yields (base URL, the handler's start log)."""
    port = free_port()
    log = tmp_path / "starts.jsonl"
    log.touch()
    env = {
        **os.environ,
        "DATABASE_URL": url_of(database_url),
        "CRON_SECRET": TEST_SECRET,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "CRONTICK_HANDLERS": "tests.hooks.serve_handlers",
        "CRONTICK_PUBLIC_URL": "https://app.example.com",
        "T_KICK_LOG": str(log),
        "PYTHONPATH": PYTHONPATH,
    }
    env.pop("CRONTICK_KICK", None)
    env.pop("AWS_LAMBDA_FUNCTION_NAME", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "crontick.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _up(base), timeout=20)
        yield base, log
    finally:
        proc.terminate()
        proc.wait(10)


def _up(base: str) -> bool:
    try:
        return httpx.get(base + "/api/health").status_code == 200
    except httpx.HTTPError:
        return False
