"""pytest fixtures for an app's own tests of its handlers: a fresh, migrated database per test.

Enable it in the app's `conftest.py` with `pytest_plugins = ["crontick.testing.plugin"]`. The
server comes from `pytest --crontick-database-url URL` (else DATABASE_URL): a role that may create
databases; the database the URL names is never touched. Once per session a template database is migrated (`crontick migrate`, with the
process's CRONTICK_SCHEMA); each test gets a copy of it, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from crontick import db

OPTION = "--crontick-database-url"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        default=None,
        help="crontick.testing.plugin: the PostgreSQL server to make a database per test on (default: DATABASE_URL)",
    )


@pytest.fixture(scope="session")
def crontick_server_url(pytestconfig: pytest.Config) -> str:
    """The PostgreSQL server the fixtures make their databases on."""
    url = pytestconfig.getoption(OPTION) or os.environ.get("DATABASE_URL")
    if not url:
        raise pytest.UsageError(
            f"crontick.testing.plugin: expected {OPTION} URL or DATABASE_URL (a PostgreSQL URL whose role may create "
            "databases), got neither"
        )
    return str(url)


@pytest.fixture(scope="session")
def crontick_template_database(crontick_server_url: str) -> Iterator[str]:
    """The name of a database `crontick migrate` ran on, once per session; each test copies it."""
    server = crontick_server_url
    name = f"crontick_template_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        asyncio.run(db.migrate(make_conninfo(server, dbname=name)))
        yield name
    finally:
        _drop(server, name)


@pytest.fixture
def crontick_database_url(crontick_server_url: str, crontick_template_database: str) -> Iterator[str]:
    """A fresh, migrated database for this test only (a conninfo string): nothing one test enqueues reaches another."""
    server = crontick_server_url
    name = f"crontick_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("create database {} template {}").format(
                sql.Identifier(name), sql.Identifier(crontick_template_database)
            )
        )
    try:
        yield make_conninfo(server, dbname=name)
    finally:
        from crontick.hooks import kick

        kick.wait_for_threads()  # a kick a Python crontick.signal started must not tick a database that is gone
        _drop(server, name)


@pytest.fixture
def crontick_conn(crontick_database_url: str) -> Iterator[psycopg.Connection[Any]]:
    """An autocommit connection to this test's database: what crontick.enqueue and crontick.testing take."""
    with psycopg.connect(crontick_database_url, autocommit=True) as conn:
        yield conn


def _drop(server: str, name: str) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
