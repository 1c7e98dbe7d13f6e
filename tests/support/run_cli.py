"""Run the installed `crontick` console script as a subprocess, with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.constants import PYTHONPATH, ROOT
from tests.support.databases import url_of

CRONTICK = Path(sys.executable).parent / "crontick"


def cli_env(database_url: str | None, **extra: str) -> dict[str, str]:
    """The caller's environment without any crontick settings, plus DATABASE_URL and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRONTICK_", "CRON_", "QSTASH_", "DATABASE_"))}
    # ROOT, so CRONTICK_HANDLERS can name the test handler modules; then the caller's own path, so
    # a run with PYTHONPATH=<checkout>/lib serves that checkout's crontick, not the installed one.
    env["PYTHONPATH"] = PYTHONPATH
    if database_url is not None:
        env["DATABASE_URL"] = url_of(database_url)
    env.update(extra)
    return env


def crontick(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CRONTICK), *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def spawn(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CRONTICK), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )


def crontick_many(
    commands: list[list[str]], env: dict[str, str], timeout: float = 60
) -> list[subprocess.CompletedProcess[str]]:
    """Run several commands at once (each is a cold Python start, so this halves the wall time on 2 cores)."""
    procs = [(command, spawn(*command, env=env)) for command in commands]
    results = []
    for command, proc in procs:
        out, err = proc.communicate(timeout=timeout)
        results.append(subprocess.CompletedProcess([str(CRONTICK), *command], proc.returncode, out, err))
    return results
