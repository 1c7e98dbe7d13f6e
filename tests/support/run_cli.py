"""Run the installed `crontick` console script as a subprocess, with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time
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


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """A failed command: non-zero exit, one `crontick: error: …` line on stderr, no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("crontick: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def until_the_admin_line(proc: subprocess.Popen[str], seconds: float) -> str:
    """What `crontick dev` printed until its "admin dashboard is at" line (it is serving then)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + seconds
    lines: list[str] = []
    while not any("admin dashboard is at" in line for line in lines):
        assert time.monotonic() < deadline and proc.poll() is None, (lines, proc.poll())
        lines.append(proc.stdout.readline())
    return "".join(lines)
