"""The PostgreSQL the benchmark runs on: CRONTICK_BENCH_DATABASE_URL, or an embedded server."""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import quote, urlencode

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

URL_VARIABLE = "CRONTICK_BENCH_DATABASE_URL"


def admin_url(stack: ExitStack) -> str:
    """A URL whose role may create databases: the variable's, or a throwaway embedded server's."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if url:
        return url
    from crontick.db import embedded

    data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="crontick-bench-"))
    return embedded.start(Path(data_dir), cleanup=True)


def fresh_database(admin: str, name: str) -> str:
    """Drop and re-create database `name`; returns its conninfo."""
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        # For the benchmark's own SQL (`select count(*) from jobs`); crontick names its schema itself.
        conn.execute(sql.SQL("alter database {} set search_path = crontick, public").format(sql.Identifier(name)))
    return make_conninfo(admin, dbname=name)


def drop_database(admin: str, name: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def drop_bench_databases(admin: str) -> None:
    """Drop every database a bench made (their names start with crontick_bench_), so a run leaves the server as it found it."""
    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute("select datname from pg_database where starts_with(datname, 'crontick_bench_')").fetchall()
    for (name,) in rows:
        drop_database(admin, name)


def describe(admin: str) -> str:
    """The server's version line, for the results file."""
    with psycopg.connect(admin, autocommit=True) as conn:
        row = conn.execute("select version()").fetchone()
    return str(row[0]) if row else "?"


def as_url(conninfo: str) -> str:
    """A postgresql:// URL for a libpq conninfo, for drivers (asyncpg) that take only URLs."""
    d = conninfo_to_dict(conninfo)
    user = quote(str(d.get("user", "postgres")), safe="")
    password = f":{quote(str(d['password']), safe='')}" if d.get("password") else ""
    host, port = str(d.get("host", "")), str(d.get("port", ""))
    query = {"host": host, "port": port} if host.startswith("/") else {}
    where = "" if query else f"{host}{':' + port if port else ''}"
    return f"postgresql://{user}{password}@{where}/{quote(str(d['dbname']), safe='')}" + (
        f"?{urlencode(query)}" if query else ""
    )
