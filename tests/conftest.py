"""Shared test fixtures: a real PostgreSQL (local or embedded), a database per test, a live app."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from crontick import db

ROOT = Path(__file__).resolve().parent.parent
TEST_SECRET = "test-secret-" + "x" * 32


def _admin_url() -> str:
    url = os.environ.get("CRONTICK_TEST_DATABASE_URL")
    if url:
        return url
    from crontick import embedded

    return embedded.start(ROOT / ".crontick" / f"test-pg-{os.getpid()}", cleanup=True)


@pytest.fixture(scope="session")
def admin_url() -> str:
    return _admin_url()


@pytest.fixture(scope="session")
def template_name(admin_url: str) -> Iterator[str]:
    """A migrated template database; each test clones it (fast, and isolated for SKIP LOCKED tests)."""
    name = f"crontick_tpl_{os.getpid()}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}"')
        conn.execute(f'create database "{name}"')
    asyncio.run(db.migrate(make_conninfo(admin_url, dbname=name)))
    yield name
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')


@contextmanager
def fresh_database(admin_url: str, template: str) -> Iterator[str]:
    name = f"crontick_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}" template "{template}"')
    try:
        yield make_conninfo(admin_url, dbname=name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture
def database_url(admin_url: str, template_name: str) -> Iterator[str]:
    """A fresh, migrated database for this test only (a libpq conninfo string)."""
    with fresh_database(admin_url, template_name) as url:
        yield url


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(database_url, autocommit=True) as c:
        yield c


def url_of(conninfo: str) -> str:
    """A postgresql:// URL for a conninfo (for tools like curl-driven subprocesses that want a URL)."""
    d = conninfo_to_dict(conninfo)
    host = d.get("host", "")
    port = d.get("port", "5432")
    user = d.get("user", "postgres")
    if host.startswith("/"):
        return f"postgresql://{user}@/{d['dbname']}?host={host}&port={port}"
    return f"postgresql://{user}@{host}:{port}/{d['dbname']}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(app: Any, port: int | None = None) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on a free (or the given) loopback port, in a thread; yields the base URL."""
    import uvicorn

    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def live_app() -> Callable[..., Any]:
    """live_app(settings) -> context manager yielding the base URL of the real app over HTTP."""
    from crontick.app import create_app

    return lambda settings: serve(create_app(settings))


class JsonLineCheck(logging.Filter):
    """Sees every record the `crontick` logger emits (as a filter, so it changes no handler setup) and
    keeps each message that is not exactly one JSON object: the contract says every line is one."""

    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        try:
            parsed = json.loads(message, object_pairs_hook=_no_duplicate_keys)
        except ValueError:  # includes a repeated key: how a pasted value forges "event"
            parsed = None
        if not isinstance(parsed, dict) or "\n" in message or not isinstance(parsed.get("event"), str):
            self.bad.append(message)
        return True


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"repeated keys in {keys}")
    return dict(pairs)


@pytest.fixture(scope="session")
def json_line_check() -> Iterator[JsonLineCheck]:
    check = JsonLineCheck()
    logger = logging.getLogger("crontick")
    logger.addFilter(check)
    try:
        yield check
    finally:
        logger.removeFilter(check)


@pytest.fixture(autouse=True)
def every_log_line_is_json(json_line_check: JsonLineCheck) -> Iterator[None]:
    """Fails the test during which the app logged a line that is not one JSON object with an event."""
    seen = len(json_line_check.bad)
    yield
    bad = json_line_check.bad[seen:]
    if bad:
        pytest.fail(f"crontick logged {len(bad)} line(s) that are not one JSON object: {bad[:3]!r}")
