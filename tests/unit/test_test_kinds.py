"""The kind of a test (tests/support/kinds.py): db, http, process or pure, read off its fixtures and its module's imports."""

from __future__ import annotations

import types

import pytest

from tests.support import kinds


@pytest.mark.parametrize(
    ("fixtures", "imported", "expected"),
    [
        pytest.param(set(), set(), ["pure"], id="nothing: pure"),
        pytest.param({"tmp_path", "monkeypatch"}, {"json", "crontick.retry"}, ["pure"], id="pytest's own and a lib"),
        pytest.param({"conn", "database_url", "admin_url"}, set(), ["db"], id="a database per test"),
        pytest.param({"live_app", "database_url"}, set(), ["db", "http"], id="the live app on its database"),
        pytest.param({"served"}, set(), ["http", "process"], id="crontick serve as a process"),
        pytest.param(set(), {"subprocess"}, ["process"], id="a subprocess by a plain call"),
        pytest.param(set(), {"tests.support.databases"}, ["db"], id="a database without the fixture"),
        pytest.param({"httpserver"}, {"tests.support.run_cli"}, ["http", "process"], id="a server and the CLI"),
    ],
)
def test_a_tests_kinds_come_from_its_fixtures_and_its_modules_imports(
    fixtures: set[str], imported: set[str], expected: list[str]
) -> None:
    assert kinds.kinds_of(fixtures, imported) == expected


def test_a_module_is_known_by_what_it_imports_and_where_its_names_come_from() -> None:
    import subprocess  # here, not at the top: this file's own tests stay pure

    from tests.support import servers

    module = types.ModuleType("t_kinds")
    module.subprocess = subprocess  # type: ignore[attr-defined]
    module.serve = servers.serve  # type: ignore[attr-defined]
    module.LIMIT = 3  # type: ignore[attr-defined]
    assert {"subprocess", "tests.support.servers"} <= kinds.imported_from(module)
    assert kinds.kinds_of(set(), kinds.imported_from(module)) == ["http", "process"]


def test_this_file_is_pure_as_its_own_markers_say(request: pytest.FixtureRequest) -> None:
    marked = {m.name for m in request.node.iter_markers()}
    assert "pure" in marked and not marked & {"db", "http", "process"}
