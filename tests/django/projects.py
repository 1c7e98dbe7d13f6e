"""The Django projects under test, each on a fresh database of its own: examples/django_project (Project) and
tests/django/booking_project (Site), the commands a user would type in them."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.support.constants import ROOT, TEST_SECRET
from tests.support.servers import free_port


@contextmanager
def project_database(
    admin_url: str, project: Path, settings_module: str, **env: str
) -> Iterator[tuple[str, dict[str, str]]]:
    """An empty database (no template, no search_path), dropped afterwards; yields its conninfo and an environment
    where `project` is importable, its settings read POSTGRES_* for it, and CRON_SECRET and `env` are set."""
    name = f"crontick_django_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    server = conninfo_to_dict(admin_url)
    # The outer environment's crontick settings (a developer's DATABASE_URL, CRONTICK_KICK, …) stay out.
    environment = {k: v for k, v in os.environ.items() if k != "DATABASE_URL" and not k.startswith("CRONTICK_")}
    environment.update(
        PYTHONPATH=os.pathsep.join(p for p in (str(project), os.environ.get("PYTHONPATH", "")) if p),
        DJANGO_SETTINGS_MODULE=settings_module,
        POSTGRES_DB=name,
        POSTGRES_USER=str(server.get("user", "postgres")),
        POSTGRES_PASSWORD=str(server.get("password", "")),
        POSTGRES_HOST=str(server.get("host", "127.0.0.1")),
        POSTGRES_PORT=str(server.get("port", "5432")),
        CRON_SECRET=TEST_SECRET,
        **env,
    )
    try:
        yield make_conninfo(admin_url, dbname=name), environment
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


EXAMPLE = ROOT / "examples" / "django_project"


ADMIN_SECRET = "admin-secret-" + "y" * 32


# The handler's ORM write, as pg_stat_activity shows the last statement of a connection still open.
HANDLER_UPDATE = 'UPDATE "signups_signup"%'


@dataclass
class Project:
    """The example project on its own database: its environment, and the commands a user would type."""

    url: str
    env: dict[str, str]

    def manage(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=EXAMPLE,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def migrate(self) -> None:
        """`manage.py migrate` alone: Django's tables, and crontick's schema through crontick.django's migration."""
        done = self.manage("migrate")
        assert done.returncode == 0, done.stderr

    @contextmanager
    def serve(self, port: int | None = None, **env: str) -> Iterator[str]:
        """uvicorn serving project.asgi:application (Django with crontick mounted at /ops); yields the base URL."""
        port = port or free_port()
        with tempfile.TemporaryFile("w+") as log:  # a file, not a pipe: crontick's log lines never block the server
            command = [sys.executable, "-m", "uvicorn", "project.asgi:application", "--port", str(port)]
            server = subprocess.Popen(command, cwd=EXAMPLE, env={**self.env, **env}, stderr=log, text=True)
            base = f"http://127.0.0.1:{port}"
            try:
                deadline = time.monotonic() + 60
                while True:
                    if server.poll() is not None:
                        log.seek(0)
                        raise AssertionError(f"uvicorn exited {server.returncode}: {log.read()}")
                    try:
                        httpx.get(base + "/ops/api/health", timeout=2)
                        break
                    except httpx.TransportError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.1)
                yield base
            finally:
                server.terminate()
                try:
                    server.wait(10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()

    def one(self, query: str, params: dict[str, Any] | None = None) -> Any:
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(query, params).fetchone()
        return None if row is None else row[0] if len(row) == 1 else row


def wait_until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {check}")
        time.sleep(0.05)
    return value


BOOKING = ROOT / "tests" / "django" / "booking_project"


SOURCE = "public.salon_reminders"


@dataclass
class Site:
    url: str
    env: dict[str, str]

    def django(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "django", *args],
            cwd=BOOKING,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def book(self, name: str, starts_at: datetime) -> int:
        with psycopg.connect(self.url, autocommit=True) as conn:
            service = conn.execute("insert into salon_service (name) values ('Haircut') returning id").fetchone()
            customer = conn.execute(
                "insert into salon_customer (name, email, phone) values (%s, %s, '') returning id",
                (name, name.lower().replace(" ", ".") + "@example.com"),
            ).fetchone()
            assert service is not None and customer is not None
            row = conn.execute(
                "insert into salon_appointment (customer_id, service_id, starts_at, cancelled)"
                " values (%s, %s, %s, false) returning id",
                (customer[0], service[0], starts_at),
            ).fetchone()
        assert row is not None
        return int(row[0])
