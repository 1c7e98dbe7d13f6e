"""crontick.jobs.shutdown: once the process is exiting, a tick starts no job and hands its batch back unspent, and a
wait for a follow-up ends at once. In a subprocess of its own, since the flag is never cleared in a process."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import psycopg

import crontick
from tests.support.constants import ROOT
from tests.support.run_cli import cli_env

EXITING = """
import asyncio, sys, time
from crontick.jobs import shutdown
from tests.support import core_jobs

shutdown.begin()
result = core_jobs.tick(sys.argv[1])
began = time.monotonic()
slept = asyncio.run(shutdown.sleep(30))
print(result.jobs.claimed, result.jobs.released, result.jobs.succeeded, slept, time.monotonic() - began < 5)
"""


def test_an_exiting_process_starts_no_job_and_hands_the_batch_back(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = [crontick.enqueue(conn, "t_core.ok", {"n": n}) for n in range(5)]
    done = subprocess.run(
        [sys.executable, "-c", EXITING, database_url], env=cli_env(database_url), cwd=ROOT,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5", "5", "0", "False", "True"]  # claimed, all released, none run; no wait
    rows = conn.execute("select status, attempts from jobs where id = any(%s)", (ids,)).fetchall()
    assert rows == [("pending", 0)] * 5
