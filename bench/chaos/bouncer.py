"""A PgBouncer in transaction mode that a chaos scenario (or a pooler test) starts in front of a server it controls."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .rig import free_port

if TYPE_CHECKING:
    from .scenarios import Row

START_TIMEOUT_SECONDS = 15.0


def pgbouncer_binary() -> str | None:
    return (
        os.environ.get("CRONTICK_PGBOUNCER")
        or shutil.which("pgbouncer")
        or next(
            (
                p
                for p in ("/usr/sbin/pgbouncer", "/usr/local/bin/pgbouncer", "/opt/homebrew/bin/pgbouncer")
                if os.path.exists(p)
            ),
            None,
        )
    )


def not_run(scenario: str) -> Row:
    """The row of a PgBouncer scenario on a machine without PgBouncer: a failure where CI requires it."""
    from .scenarios import Row

    required = bool(os.environ.get("CRONTICK_REQUIRE_PGBOUNCER"))
    return Row(scenario, "not run", "PgBouncer is not installed (apt-get install pgbouncer)", ok=not required)


def _run_as(host: str) -> pwd.struct_passwd | None:
    """PgBouncer refuses to run as root: run it as the owner of the server's socket, else postgres or nobody."""
    if os.geteuid() != 0:
        return None
    if host.startswith("/"):
        return pwd.getpwuid(os.stat(host).st_uid)
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("expected a 'postgres' or 'nobody' user to run PgBouncer as (it refuses root), got neither")


@contextmanager
def pgbouncer(binary: str, admin: str, *, pool_size: int = 20) -> Iterator[int]:
    """PgBouncer in transaction mode in front of `admin`'s server, on a free loopback port; yields the port.

    query_wait_timeout is left at PgBouncer's default (120 s): a query waiting for a server that
    is down, or for a slot in a full pool, waits that long, and crontick must answer within
    its own cut-off regardless.
    """
    server = {k: str(v) for k, v in conninfo_to_dict(admin).items() if v is not None}
    user = server.get("user") or "postgres"
    host = server.get("host") or "127.0.0.1"
    target = f"host={host} port={server.get('port') or '5432'} user={user}"
    if server.get("password"):
        target += f" password={server['password']}"
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="crontick-chaos-pgbouncer-") as name:
        folder = Path(name)
        owner = _run_as(host)
        if owner:
            os.chown(folder, owner.pw_uid, owner.pw_gid)
        (folder / "userlist.txt").write_text(f'"{user}" ""\n')
        ini = folder / "pgbouncer.ini"
        ini.write_text(
            f"[databases]\n* = {target}\n"
            f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\nauth_type = trust\n"
            f"auth_file = {folder / 'userlist.txt'}\npool_mode = transaction\nmax_client_conn = 500\n"
            f"default_pool_size = {pool_size}\n"
            # Only shortens recovery: retry a login soon after the server is back (the default
            # waits 15 s after a failed one). Waits for a server keep their default length.
            "server_login_retry = 1\n"
            f"logfile = {folder / 'pgbouncer.log'}\npidfile = {folder / 'pgbouncer.pid'}\n"
        )
        command = [binary, "-q", *(["-u", owner.pw_name] if owner else []), str(ini)]
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_for(make_conninfo(admin, host="127.0.0.1", port=str(port)), proc)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def through(conninfo: str, port: int) -> str:
    """The same database and user, reached through the PgBouncer on `port`."""
    return make_conninfo(conninfo, host="127.0.0.1", port=str(port), password="")


def _wait_for(conninfo: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with psycopg.connect(conninfo, connect_timeout=2, autocommit=True) as conn:
                conn.execute("select 1")
                return
        except psycopg.OperationalError:
            time.sleep(0.05)
    raise RuntimeError(
        f"PgBouncer did not accept connections within {START_TIMEOUT_SECONDS:.0f} s (exit code {proc.poll()})"
    )
