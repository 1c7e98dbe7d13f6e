"""The PostgreSQL tests run on: CRONTICK_TEST_DATABASE_URL's server or an embedded one, and a fresh database."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.support.constants import ROOT


def admin_url() -> str:
    """A conninfo whose role may create databases: the variable's, or an embedded server for this process."""
    url = os.environ.get("CRONTICK_TEST_DATABASE_URL")
    if url:
        return url
    from crontick.db import embedded

    return embedded.start(ROOT / ".crontick" / f"test-pg-{os.getpid()}", cleanup=True)


def share_with_workers() -> None:
    """Starts the embedded server in this process (pytest-xdist's controller, which outlives its workers and
    deletes the data when it exits) and names it in CRONTICK_TEST_DATABASE_URL for the workers it spawns."""
    if not os.environ.get("CRONTICK_TEST_DATABASE_URL"):
        os.environ["CRONTICK_TEST_DATABASE_URL"] = admin_url()


@contextmanager
def fresh_database(admin_url: str, template: str) -> Iterator[str]:
    """A new database cloned from `template`, dropped afterwards; yields its conninfo.

    Before the drop, every kick thread still running (crontick.kick_after_commit, a Python
    crontick.signal) is joined: one left behind would tick a database that is gone (or a PgBouncer
    a later test stopped), and its kick_failed line would land in a later test's log capture.
    """
    name = f"crontick_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}" template "{template}"')
        # For the tests' own SQL only (`select … from jobs`): crontick's statements name their schema,
        # which tests/db/test_schema_names.py checks, and tests/app/test_existing_app.py proves
        # against a database with no search_path and tables of its own named jobs and bookings.
        conn.execute(f'alter database "{name}" set search_path = crontick, public')
    try:
        yield make_conninfo(admin_url, dbname=name)
    finally:
        from crontick.hooks import kick

        kick.wait_for_threads()
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')


def url_of(conninfo: str) -> str:
    """A postgresql:// URL for a conninfo (for tools like curl-driven subprocesses that want a URL)."""
    d = conninfo_to_dict(conninfo)
    host = d.get("host", "")
    port = d.get("port", "5432")
    user = d.get("user", "postgres")
    if host.startswith("/"):
        return f"postgresql://{user}@/{d['dbname']}?host={host}&port={port}"
    return f"postgresql://{user}@{host}:{port}/{d['dbname']}"
