"""The fixtures every test folder may use: a real PostgreSQL and a database per test, the live app, a deploy
host's environment, the log checks, the local OIDC issuer, the recording provider; and the markers of each
test's kind. Helpers live in tests/support/."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from crontick import db
from tests.support import databases, kinds
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.credentials import OidcIssuer
from tests.support.databases import fresh_database, url_of
from tests.support.logs import JsonLineCheck, LogLines
from tests.support.otel import traced
from tests.support.reminders import Provider, recording_server
from tests.support.servers import free_port, serve

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import rsa
    from pytest_httpserver import HTTPServer

# Names code on other branches still imports from here; they live in tests/support, and new code imports
# them from there (tests/unit/test_test_layout.py fails on an import of a conftest).
# Their tests are marked serial: `make test` runs them alone, after the rest has run on several workers.
SERIAL_FOLDERS = frozenset({"chaos", "perf"})

__all__ = ["ROOT", "TEST_SECRET", "free_port", "fresh_database", "serve", "url_of"]


@pytest.fixture(scope="session")
def admin_url() -> str:
    return databases.admin_url()


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


@pytest.fixture
def database_url(admin_url: str, template_name: str) -> Iterator[str]:
    """A fresh, migrated database for this test only (a libpq conninfo string)."""
    with databases.fresh_database(admin_url, template_name) as url:
        yield url


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(database_url, autocommit=True) as c:
        yield c


@pytest.fixture
def live_app() -> Callable[..., Any]:
    """live_app(settings) -> context manager yielding the base URL of the real app over HTTP."""
    from crontick.app import create_app

    return lambda settings: serve(create_app(settings))


@pytest.fixture
def host_env(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment a Vercel project or Lambda function sets; the app reads it when first used (the tests of
    crontick.aws, crontick.vercel and tests/deploy). Importing noop_jobs registers the no-op job type."""
    from tests.support import noop_jobs

    for name in (
        "QSTASH_CURRENT_SIGNING_KEY",
        "CRONTICK_GITHUB_OIDC_REPOSITORY",
        "CRONTICK_PUBLIC_URL",
        "CRONTICK_HANDLERS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", url_of(database_url))
    monkeypatch.setenv("CRON_SECRET", TEST_SECRET)
    monkeypatch.setenv("CRONTICK_BATCH_SIZE", str(noop_jobs.BATCH_SIZE))


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


@pytest.fixture(scope="module")
def otel_exporter() -> Iterator[Any]:
    """OpenTelemetry's SDK on the global tracer provider, with an in-memory exporter, for this module's tests
    (tests/support/otel.py); afterwards the tests run as in an app that does not trace."""
    with traced() as exporter:
        yield exporter


@pytest.fixture
def spans(otel_exporter: Any) -> Any:
    """The in-memory exporter, emptied: the spans this test finished (`spans.get_finished_spans()`)."""
    otel_exporter.clear()
    return otel_exporter


@pytest.fixture
def crontick_log() -> Iterator[LogLines]:
    """Every line the `crontick` logger writes during this test."""
    handler = LogLines()
    logger = logging.getLogger("crontick")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.fixture(scope="session")
def rsa_key() -> rsa.RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="session")
def other_rsa_key() -> rsa.RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def issuer(httpserver: HTTPServer, rsa_key: rsa.RSAPrivateKey) -> OidcIssuer:
    """A fresh local OIDC issuer per test, with crontick's per-process JWKS cache emptied so fetches can be counted."""
    from crontick.auth import jwks

    jwks.reset()
    return OidcIssuer(httpserver, rsa_key)


@pytest.fixture(scope="session")
def provider_server() -> Iterator[Provider]:
    """One server playing every reminder provider for the session; `provider` resets it for each test."""
    with recording_server() as server:
        yield server


@pytest.fixture
def provider(provider_server: Provider) -> Provider:
    provider_server.reset()
    return provider_server


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist with no CRONTICK_TEST_DATABASE_URL, the controller starts the one embedded server
    (tests/support/databases.py) and its workers inherit the variable naming it: one server, never two."""
    if getattr(config.option, "numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
        databases.share_with_workers()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks each test db, http, process or pure (tests/support/kinds.py), and serial in SERIAL_FOLDERS; `slow`
    is marked by hand."""
    kinds.mark(items)
    for item in items:
        if item.path.parent.name in SERIAL_FOLDERS:
            item.add_marker(pytest.mark.serial)
