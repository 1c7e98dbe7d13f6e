"""Ctrl-C stops `crontick dev` at every moment of its start-up, not only once uvicorn serves (uvicorn's own handler
then takes over): here while dev's migration, inside asyncio.run, waits for the lock another migrate holds."""

from __future__ import annotations

import signal
import subprocess
import time

import psycopg

from crontick.db.migrate import MIGRATION_LOCK_KEY
from tests.support.constants import ROOT
from tests.support.databases import url_of
from tests.support.run_cli import CRONTICK, cli_env
from tests.support.servers import free_port

WAITING = (
    "select count(*) from pg_stat_activity where datname = current_database() and backend_type = 'client backend'"
    " and wait_event_type = 'Lock' and wait_event = 'advisory'"
)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell script's background job (`crontick dev &`) starts


def test_ctrl_c_stops_dev_while_its_migration_waits_even_when_started_with_sigint_ignored(database_url: str) -> None:
    with psycopg.connect(url_of(database_url), autocommit=True) as holder:
        holder.execute("begin")
        holder.execute("select pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))  # another `crontick migrate`
        proc = subprocess.Popen(
            [str(CRONTICK), "dev"],
            env=cli_env(database_url, PORT=str(free_port())),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_ignore_sigint,  # noqa: PLW1509 (no threads of ours run here)
        )
        try:
            _until_dev_waits(database_url, proc, 60)
            proc.send_signal(signal.SIGINT)  # Ctrl-C
            code = proc.wait(20)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            holder.execute("rollback")
    assert proc.stdout is not None
    out = proc.stdout.read()
    assert code == 130, f"crontick dev answered {code} to Ctrl-C (None: it ran on 20 s); it wrote:\n{out[-3000:]}"
    assert "Traceback" not in out and "migrations" not in out, out


def _until_dev_waits(database_url: str, proc: subprocess.Popen[str], seconds: float) -> None:
    """Until dev's migration waits for the advisory lock (seen from a connection of its own: inside the holder's
    transaction pg_stat_activity would stay as it was when first read)."""
    deadline = time.monotonic() + seconds
    with psycopg.connect(url_of(database_url), autocommit=True) as watcher:
        while watcher.execute(WAITING).fetchone() != (1,):
            assert time.monotonic() < deadline and proc.poll() is None, ("dev never waited for the lock", proc.poll())
            time.sleep(0.05)
