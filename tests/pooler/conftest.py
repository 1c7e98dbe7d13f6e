"""A real PgBouncer in transaction mode in front of the test database, for every test in this folder.

Here `database_url` (and so `conn`, and every app or CLI started from it) reaches PostgreSQL
through PgBouncer, so each test in this folder proves that crontick keeps no session state:
no named prepared statements, no LISTEN, no SET outside a transaction, advisory locks only at
transaction scope. PgBouncer must be installed (`apt-get install pgbouncer`; .ci/run does it).
In CI (.ci/run sets CRONTICK_REQUIRE_PGBOUNCER=1) a missing PgBouncer fails these tests. On a
developer's fresh machine, where `make test` must pass with nothing but Python installed, they
are skipped with a message saying how to run them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.conftest import free_port, fresh_database

START_TIMEOUT_SECONDS = 15.0
SEARCH_PATHS = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer", "/opt/homebrew/bin/pgbouncer")


@dataclass(frozen=True)
class PgBouncer:
    port: int
    log: Path

    def route(self, conninfo: str) -> str:
        """The same database and user, reached through PgBouncer."""
        return make_conninfo(conninfo, host="127.0.0.1", port=str(self.port), password="")


def pgbouncer_binary() -> str:
    found = os.environ.get("CRONTICK_PGBOUNCER") or shutil.which("pgbouncer")
    found = found or next((p for p in SEARCH_PATHS if os.path.exists(p)), None)
    if not found:
        message = (
            "expected PgBouncer for the pooler tests, got none on PATH or in /usr/sbin: install it "
            "(apt-get install pgbouncer, or brew install pgbouncer; .ci/run installs it), "
            "or point CRONTICK_PGBOUNCER at the binary"
        )
        if os.environ.get("CRONTICK_REQUIRE_PGBOUNCER"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message + " (CI sets CRONTICK_REQUIRE_PGBOUNCER=1 and fails instead)")
    return found


def run_as(server_host: str) -> str | None:
    """PgBouncer refuses to run as root: run it as the user who owns the server's socket, or postgres/nobody."""
    if os.geteuid() != 0:
        return None
    if server_host.startswith("/"):
        return pwd.getpwuid(os.stat(server_host).st_uid).pw_name
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name).pw_name
        except KeyError:
            continue
    pytest.fail(
        "expected a 'postgres' or 'nobody' user to run PgBouncer as (it refuses root), got neither", pytrace=False
    )


def write_config(folder: Path, server: dict[str, str], port: int) -> Path:
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
        "default_pool_size = 20\n"
        # Startup parameters some test helpers send; crontick itself sends none.
        "ignore_startup_parameters = extra_float_digits,options\n"
        f"admin_users = {user}\n"
        f"logfile = {folder / 'pgbouncer.log'}\n"
        f"pidfile = {folder / 'pgbouncer.pid'}\n"
    )
    return ini


@pytest.fixture(scope="session")
def pgbouncer(admin_url: str) -> Iterator[PgBouncer]:
    binary = pgbouncer_binary()
    server = {k: str(v) for k, v in conninfo_to_dict(admin_url).items() if v is not None}
    folder = Path(tempfile.mkdtemp(prefix="crontick-pgbouncer-"))
    user = run_as(server.get("host", ""))
    if user:
        os.chown(folder, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
    port = free_port()
    ini = write_config(folder, server, port)
    bouncer = PgBouncer(port, folder / "pgbouncer.log")
    # -q: log only to the logfile. A pipe nobody reads would fill up and freeze PgBouncer.
    command = [binary, "-q", *(["-u", user] if user else []), str(ini)]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_until_up(proc, bouncer, admin_url)
        yield bouncer
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_until_up(proc: subprocess.Popen[bytes], bouncer: PgBouncer, admin_url: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = bouncer.log.read_text(errors="replace")[-3000:] if bouncer.log.exists() else "(no log)"
            pytest.fail(f"expected PgBouncer to start, got exit code {proc.returncode}: {log}", pytrace=False)
        try:
            with psycopg.connect(bouncer.route(admin_url), connect_timeout=2, autocommit=True) as conn:
                conn.execute("select 1")
                return
        except psycopg.OperationalError:
            time.sleep(0.05)
    pytest.fail(
        f"expected PgBouncer to accept connections on port {bouncer.port} within {START_TIMEOUT_SECONDS:.0f} s",
        pytrace=False,
    )


@pytest.fixture
def direct_url(admin_url: str, template_name: str) -> Iterator[str]:
    """A fresh migrated database, reached directly (for set-up and checks that must bypass the pooler)."""
    with fresh_database(admin_url, template_name) as url:
        yield url


@pytest.fixture
def database_url(direct_url: str, pgbouncer: PgBouncer) -> str:
    """Overrides tests/conftest.py's: the same fresh database, reached through PgBouncer."""
    return pgbouncer.route(direct_url)


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    """Overrides tests/conftest.py's: the tests' own connection goes through PgBouncer as well, so it
    must not prepare statements either (psycopg would after 5 runs of one query, as wait_for does)."""
    with psycopg.connect(database_url, autocommit=True, prepare_threshold=None) as c:
        yield c
