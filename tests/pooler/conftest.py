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

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support import pgbouncer as bouncer
from tests.support.constants import ROOT
from tests.support.databases import fresh_database
from tests.support.pgbouncer import PgBouncer

AGAIN_MODULE = "test_core_through_pgbouncer.py"


class AgainThroughPgBouncer(pytest.Module):
    """test_core_through_pgbouncer.py, and below it each test file its AGAIN names, collected once more: so
    those tests get this folder's fixtures, and no test module imports another."""

    def collect(self) -> Any:
        yield from super().collect()
        for relative in self.obj.AGAIN:
            yield pytest.Module.from_parent(
                self, path=ROOT / relative, name=relative, nodeid=f"{self.nodeid}::{relative}"
            )


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if module_path.name == AGAIN_MODULE:
        return AgainThroughPgBouncer.from_parent(parent, path=module_path)
    return None


@pytest.fixture(scope="session")
def pgbouncer(admin_url: str) -> Iterator[PgBouncer]:
    with bouncer.running(bouncer.required_binary(), admin_url) as running:
        yield running


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
