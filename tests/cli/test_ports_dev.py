"""`crontick dev` (what `make run` runs): PORT or --port, a port in use is one line before anything is done
(tests/db/test_embedded_dev_stop.py: Ctrl-C stops the embedded PostgreSQL it started)."""

from __future__ import annotations

import socket
import time
from typing import Any

import httpx
import psycopg

from tests.support.run_cli import cli_env, spawn, until_the_admin_line
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


def test_dev_serves_on_port_and_prints_its_curl_line_for_it(database_url: str) -> None:
    port = free_port()
    proc = spawn("dev", env=cli_env(database_url, PORT=str(port)))
    try:
        text = until_the_admin_line(proc, 60)
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
