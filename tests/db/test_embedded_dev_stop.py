"""`crontick dev` on a bare machine: Ctrl-C stops the embedded PostgreSQL it started, and `crontick dev --stop` then
says none is left."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from tests.support.run_cli import CRONTICK, cli_env, until_the_admin_line
from tests.support.servers import free_port


def test_ctrl_c_stops_the_embedded_postgresql_and_dev_stop_says_none_is_left(tmp_path: Path) -> None:
    env = cli_env(None, PORT=str(free_port()))
    proc = subprocess.Popen(
        [str(CRONTICK), "dev"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    pid_file = tmp_path / ".crontick" / "pgdata" / "postmaster.pid"
    try:
        until_the_admin_line(proc, 120)
        assert pid_file.exists()
        _until_uvicorn_runs(proc, 120)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        exited = _exits_within(proc, 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert exited, (
        f"crontick dev still ran 60 s after Ctrl-C; it wrote, after the admin line:\n{proc.stdout.read()[-4000:]}"
    )
    assert not pid_file.exists(), "the embedded PostgreSQL is still running"
    again = subprocess.run(
        [str(CRONTICK), "dev", "--stop"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert (again.returncode, again.stdout.strip()) == (0, "crontick dev: embedded PostgreSQL was not running")


def _exits_within(proc: subprocess.Popen[str], seconds: float) -> bool:
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _until_uvicorn_runs(proc: subprocess.Popen[str], seconds: float) -> None:
    """Read on to uvicorn's "running on" line: the admin line comes before uvicorn has set its signal handlers, and a
    Ctrl-C sent in between was lost twice in CI (asyncio.run's own SIGINT handler cancelled a task that went on)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + seconds
    line = ""
    while "Uvicorn running on" not in line:
        assert time.monotonic() < deadline and proc.poll() is None, (line, proc.poll())
        line = proc.stdout.readline()
