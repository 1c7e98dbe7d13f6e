"""A real PgBouncer in transaction mode on a free loopback port, for the pooler tests and the chaos scenarios."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.support.servers import free_port, stop

START_TIMEOUT_SECONDS = 15.0
SEARCH_PATHS = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer", "/opt/homebrew/bin/pgbouncer")
REQUIRE_VARIABLE = "CRONTICK_REQUIRE_PGBOUNCER"  # .ci/run sets it: then a missing PgBouncer is a failure
MISSING = (
    "expected PgBouncer for the pooler tests, got none on PATH or in /usr/sbin: install it "
    "(apt-get install pgbouncer, or brew install pgbouncer; .ci/run installs it), "
    "or point CRONTICK_PGBOUNCER at the binary"
)


@dataclass(frozen=True)
class PgBouncer:
    port: int
    log: Path

    def route(self, conninfo: str) -> str:
        """The same database and user, reached through PgBouncer."""
        return through(conninfo, self.port)


def through(conninfo: str, port: int) -> str:
    """The same database and user, reached through the PgBouncer on `port`."""
    return make_conninfo(conninfo, host="127.0.0.1", port=str(port), password="")


def binary() -> str | None:
    found = os.environ.get("CRONTICK_PGBOUNCER") or shutil.which("pgbouncer")
    return found or next((p for p in SEARCH_PATHS if os.path.exists(p)), None)


def required_binary() -> str:
    """The binary, or this test skipped with how to install it (failed instead under CRONTICK_REQUIRE_PGBOUNCER)."""
    import pytest

    found = binary()
    if not found:
        if os.environ.get(REQUIRE_VARIABLE):
            pytest.fail(MISSING, pytrace=False)
        pytest.skip(MISSING + f" (CI sets {REQUIRE_VARIABLE}=1 and fails instead)")
    return found


def run_as(server_host: str) -> pwd.struct_passwd | None:
    """PgBouncer refuses to run as root: run it as the user who owns the server's socket, or postgres/nobody."""
    if os.geteuid() != 0:
        return None
    if server_host.startswith("/"):
        return pwd.getpwuid(os.stat(server_host).st_uid)
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("expected a 'postgres' or 'nobody' user to run PgBouncer as (it refuses root), got neither")


def write_config(folder: Path, server: dict[str, str], port: int, pool_size: int) -> Path:
    user = server.get("user") or "postgres"
    target = f"host={server.get('host') or '127.0.0.1'} port={server.get('port') or '5432'} user={user}"
    if server.get("password"):
        target += f" password={server['password']}"
    (folder / "userlist.txt").write_text(f'"{user}" ""\n')
    ini = folder / "pgbouncer.ini"
    ini.write_text(
        "[databases]\n"
        f"* = {target}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {folder / 'userlist.txt'}\n"
        "pool_mode = transaction\n"
        "max_client_conn = 500\n"
        f"default_pool_size = {pool_size}\n"
        # Only shortens recovery: retry a login soon after the server is back (the default waits
        # 15 s after a failed one). query_wait_timeout keeps its default (120 s): a query waiting
        # for a server that is down, or for a slot in a full pool, waits that long, and crontick
        # must answer within its own cut-off regardless.
        "server_login_retry = 1\n"
        # Startup parameters some test helpers send; crontick itself sends none.
        "ignore_startup_parameters = extra_float_digits,options\n"
        f"admin_users = {user}\n"
        f"logfile = {folder / 'pgbouncer.log'}\n"
        f"pidfile = {folder / 'pgbouncer.pid'}\n"
    )
    return ini


@contextmanager
def running(binary: str, admin: str, *, pool_size: int = 20) -> Iterator[PgBouncer]:
    """PgBouncer in front of `admin`'s server until the block ends; stopped (SIGTERM, then SIGKILL) after."""
    server = {k: str(v) for k, v in conninfo_to_dict(admin).items() if v is not None}
    with tempfile.TemporaryDirectory(prefix="crontick-pgbouncer-", ignore_cleanup_errors=True) as name:
        folder = Path(name)
        owner = run_as(server.get("host", ""))
        if owner:
            os.chown(folder, owner.pw_uid, owner.pw_gid)
        port = free_port()
        ini = write_config(folder, server, port, pool_size)
        bouncer = PgBouncer(port, folder / "pgbouncer.log")
        # -q: log only to the logfile. A pipe nobody reads would fill up and freeze PgBouncer.
        command = [binary, "-q", *(["-u", owner.pw_name] if owner else []), str(ini)]
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_until_up(proc, bouncer, admin)
            yield bouncer
        finally:
            stop(proc)


def _wait_until_up(proc: subprocess.Popen[bytes], bouncer: PgBouncer, admin: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = bouncer.log.read_text(errors="replace")[-3000:] if bouncer.log.exists() else "(no log)"
            raise RuntimeError(f"expected PgBouncer to start, got exit code {proc.returncode}: {log}")
        try:
            with psycopg.connect(bouncer.route(admin), connect_timeout=2, autocommit=True) as conn:
                conn.execute("select 1")
                return
        except psycopg.OperationalError:
            time.sleep(0.05)
    raise RuntimeError(
        f"expected PgBouncer to accept connections on port {bouncer.port} within {START_TIMEOUT_SECONDS:.0f} s"
    )
