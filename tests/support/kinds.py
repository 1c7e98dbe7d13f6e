"""The kind of each test as a marker, not the folder it sits in (`pytest -m pure`, `-m "not db"`): read off the
fixtures it uses, with what its module imports standing in where a test starts a process or a server by a plain
call rather than a fixture. `slow` is marked by hand; pyproject.toml registers all five."""

from __future__ import annotations

from types import ModuleType

import pytest

DB_FIXTURES = frozenset({"admin_url", "template_name", "database_url", "conn", "direct_url", "pgbouncer"})
HTTP_FIXTURES = frozenset(
    {
        "live_app",
        "httpserver",
        "issuer",
        "provider",
        "provider_server",
        "receiver",
        "receiver_server",
        "served",
        "project",
    }
)
# project and site: a Django project's manage.py in subprocesses, and uvicorn serving it (tests/django).
PROCESS_FIXTURES = frozenset({"served", "pytester", "project", "site"})
DB_MODULES = frozenset(
    {
        "tests.support.databases",
        "tests.support.tcp_proxy",
        "tests.support.pgbouncer",
        "tests.support.process_connection",
    }
)
HTTP_MODULES = frozenset(
    {"uvicorn", "pytest_httpserver", "tests.support.servers", "tests.support.http_checks", "tests.support.uploads"}
)
PROCESS_MODULES = frozenset(
    {
        "subprocess",
        "multiprocessing",
        "tests.support.run_cli",
        "tests.support.crontick_serve",
        "tests.support.pgbouncer",
    }
)


def imported_from(module: object) -> set[str]:
    """The modules a test module's globals come from: each module it imports, and the module of each name."""
    found: set[str] = set()
    for value in vars(module).values():
        name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        if isinstance(name, str):
            found.add(name)
    return found


def kinds_of(fixtures: set[str], imported: set[str]) -> list[str]:
    """The markers of a test that uses `fixtures` in a module whose globals come from `imported`."""
    kinds = [
        kind
        for kind, by_fixture, by_module in (
            ("db", DB_FIXTURES, DB_MODULES),
            ("http", HTTP_FIXTURES, HTTP_MODULES),
            ("process", PROCESS_FIXTURES, PROCESS_MODULES),
        )
        if fixtures & by_fixture or imported & by_module
    ]
    return kinds or ["pure"]


def mark(items: list[pytest.Item]) -> None:
    """Adds its kinds' markers to each collected test (tests/conftest.py's pytest_collection_modifyitems)."""
    imported: dict[str, set[str]] = {}
    for item in items:
        module = getattr(item, "module", None)
        key = getattr(module, "__name__", "")
        if key not in imported:
            imported[key] = imported_from(module) if module is not None else set()
        for kind in kinds_of(set(getattr(item, "fixturenames", ())), imported[key]):
            item.add_marker(kind)
