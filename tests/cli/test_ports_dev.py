"""`crontick dev` (what `make run` runs): PORT or --port, a port in use is one line before anything is done, and
Ctrl-C stops the embedded PostgreSQL it started."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

from tests.support.run_cli import CRONTICK, cli_env, spawn
from tests.support.run_cli import crontick as run_crontick
from tests.support.servers import free_port, stop


def test_a_port_in_use_is_one_line_before_the_database_is_touched(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for args, env in ((["dev"], {"PORT": str(port)}), (["dev", "--port", str(port)], {})):
            done = run_crontick(*args, env=cli_env(database_url, **env))
            assert done.returncode == 1, done
            assert done.stderr.splitlines() == [
                f"crontick: error: expected port {port} on 127.0.0.1 to be free, got: Address already in use; "
                "stop what listens there, or choose another with PORT=... or --port"
            ]
            assert "migrations" not in done.stdout and "seeded" not in done.stdout
    assert conn.execute("select count(*) from crontick.jobs").fetchone() == (0,)  # nothing seeded


def _until_the_admin_line(proc: subprocess.Popen[str], seconds: float) -> str:
    """What `crontick dev` printed until its "admin dashboard is at" line (it is serving then)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + seconds
    lines: list[str] = []
    while not any("admin dashboard is at" in line for line in lines):
        assert time.monotonic() < deadline and proc.poll() is None, (lines, proc.poll())
        lines.append(proc.stdout.readline())
    return "".join(lines)


def test_dev_serves_on_port_and_prints_its_curl_line_for_it(database_url: str) -> None:
    port = free_port()
    proc = spawn("dev", env=cli_env(database_url, PORT=str(port)))
    try:
        text = _until_the_admin_line(proc, 60)
        assert f"http://127.0.0.1:{port}/api/cron/tick" in text and ":8000" not in text
        for _ in range(100):
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert health.status_code == 200
    finally:
        stop(proc)


def test_ctrl_c_stops_the_embedded_postgresql_and_dev_stop_says_none_is_left(tmp_path: Path) -> None:
    env = cli_env(None, PORT=str(free_port()))
    proc = subprocess.Popen(
        [str(CRONTICK), "dev"], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    pid_file = tmp_path / ".crontick" / "pgdata" / "postmaster.pid"
    try:
        _until_the_admin_line(proc, 120)
        assert pid_file.exists()
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not pid_file.exists(), "the embedded PostgreSQL is still running"
    again = subprocess.run(
        [str(CRONTICK), "dev", "--stop"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert (again.returncode, again.stdout.strip()) == (0, "crontick dev: embedded PostgreSQL was not running")
