"""A Django project under test on a fresh database of its own: the database's conninfo and the environment to run it in."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.support.constants import TEST_SECRET


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
