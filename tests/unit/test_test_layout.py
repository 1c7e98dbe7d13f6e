"""The tests' own layout: no module imports a test module or a conftest, and what two test folders share lives in tests/support."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.constants import ROOT

# A string that is a whole dotted module path below tests/, such as a CRONTICK_HANDLERS value: a
# subprocess imports it, so it counts as an import.
MODULE_PATH = re.compile(r"tests(\.\w+)+")
SHARED = "support"


def named_modules(tree: ast.AST, package: str) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every module a file imports, inside functions too; for `from a import b`,
    both `a` and `a.b` (b may be a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{node.module}" if node.module else parent
            else:
                base = node.module or ""
            yield node.lineno, base
            yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_PATH.fullmatch(node.value):
            yield node.lineno, node.value


def problems_in(relative: str, source: str) -> list[str]:
    """What is wrong with the imports of the file at `relative` (a path from the checkout's root)."""
    parts = Path(relative).parts
    package = ".".join(parts[:-1])
    # The test folder a file belongs to: tests/db/... is "db"; tests/conftest.py none; bench/... "bench".
    folder = parts[1] if parts[0] == "tests" and len(parts) > 2 else ("" if parts[0] == "tests" else parts[0])
    found: dict[tuple[int, str], str] = {}  # one problem of each kind per line
    for line, module in named_modules(ast.parse(source), package):
        names = module.split(".")
        if any(name.startswith("test_") or name == "conftest" for name in names):
            found.setdefault(
                (line, "test module"),
                f"{relative}:{line}: imports {module}; a test module or a conftest is never imported "
                "(helpers go to tests/support/, fixtures to tests/conftest.py)",
            )
        elif names[0] == "tests" and len(names) > 2 and names[1] not in (SHARED, folder):
            found.setdefault(
                (line, "other folder"),
                f"{relative}:{line}: imports {module} from tests/{names[1]}/; a helper that more than one "
                "folder (or bench/) uses lives in tests/support/",
            )
    return list(found.values())


def python_files() -> list[Path]:
    return sorted(p for top in ("tests", "bench") for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_imports_a_test_module_a_conftest_or_another_folders_helper() -> None:
    files = python_files()
    assert len(files) > 100, f"expected the test and bench files under {ROOT}, got {len(files)}"
    found = [problem for p in files for problem in problems_in(p.relative_to(ROOT).as_posix(), p.read_text())]
    assert found == []


@pytest.mark.parametrize(
    ("relative", "source", "expected"),
    [
        pytest.param(
            "tests/pooler/test_a.py",
            "from tests.db.test_enqueue_tx import *",
            ["test module or a conftest"],
            id="a test module star-imported",
        ),
        pytest.param(
            "tests/kick/test_a.py",
            "def f():\n    from tests.deploy.test_vercel_function import load",
            ["test module"],
            id="a test module imported in a function",
        ),
        pytest.param(
            "tests/kick/test_a.py",
            "from tests.conftest import TEST_SECRET",
            ["test module or a conftest"],
            id="the root conftest",
        ),
        pytest.param(
            "tests/db/a_support.py",
            "from tests.pooler import conftest",
            ["test module or a conftest"],
            id="a folder's conftest",
        ),
        pytest.param(
            "tests/http/test_a.py",
            "from tests.db.core_jobs import tick",
            ["from tests/db/"],
            id="another folder's helper",
        ),
        pytest.param(
            "tests/conftest.py",
            "from tests.reminders.support import Provider",
            ["from tests/reminders/"],
            id="a folder's helper from the root conftest",
        ),
        pytest.param(
            "bench/chaos/a.py",
            "from tests.auth.issuers import hs256",
            ["from tests/auth/"],
            id="a folder's helper from bench",
        ),
        pytest.param(
            "tests/kick/test_a.py",
            'ENV = {"CRONTICK_HANDLERS": "tests.inbound.hooks"}',
            ["from tests/inbound/"],
            id="a CRONTICK_HANDLERS string",
        ),
        pytest.param(
            "tests/db/test_a.py",
            "from tests.support.core_jobs import tick\nfrom tests.db.seed import rows",
            [],
            id="support and own folder",
        ),
        pytest.param(
            "tests/deploy/test_a.py",
            "from tests.deploy import jobs\nfrom bench.chaos.rig import Rig",
            [],
            id="own package and bench",
        ),
        pytest.param(
            "bench/chaos/a.py",
            "from .rig import Rig\nfrom . import handlers\nfrom tests.support import servers",
            [],
            id="relative imports in bench",
        ),
    ],
)
def test_the_layout_check_finds_each_kind_of_import(relative: str, source: str, expected: list[str]) -> None:
    found = problems_in(relative, source)
    assert len(found) == len(expected), found
    for problem, words in zip(found, expected, strict=True):
        assert problem.startswith(relative + ":") and words in problem
