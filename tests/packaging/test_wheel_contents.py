"""The wheel users install carries every file the code loads: SQL, templates, static files, py.typed.

`.ci/run` builds the wheel once and names it in CRONTICK_TEST_WHEEL; `make test` builds one here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import crontick
from tests.support.constants import ROOT

PACKAGE = ROOT / "lib" / "crontick"


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    named = os.environ.get("CRONTICK_TEST_WHEEL")
    if named:
        wheel = Path(named)
    else:
        out = tmp_path_factory.mktemp("dist")
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        (wheel,) = out.glob("crontick-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def package_files() -> list[str]:
    """Every file under lib/crontick as the wheel should name it (crontick/...), through the sql/ symlink."""
    files = []
    for path in PACKAGE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files.append("crontick/" + path.relative_to(PACKAGE).as_posix())
    return sorted(files)


def test_every_file_of_the_package_is_in_the_wheel(wheel_names: set[str]) -> None:
    files = package_files()
    assert "crontick/py.typed" in files
    assert [f for f in files if f not in wheel_names] == []


def test_every_sql_file_ships_under_crontick_sql(wheel_names: set[str]) -> None:
    sql = sorted(
        "crontick/sql/" + p.relative_to(ROOT / "sql").as_posix() for p in (ROOT / "sql").rglob("*") if p.is_file()
    )
    assert any(f.startswith("crontick/sql/migrations/") for f in sql)
    assert any(f.startswith("crontick/sql/functions/") for f in sql)
    assert [f for f in sql if f not in wheel_names] == []


def test_templates_and_static_files_ship(wheel_names: set[str]) -> None:
    """Checked by name as well, so a hatch exclude added later cannot drop them with the rest of the package."""
    assets = [f for f in package_files() if {"templates", "static"} & set(f.split("/")[:-1])]
    assert [f for f in assets if f not in wheel_names] == []


def test_the_wheel_carries_nothing_from_outside_the_package(wheel_names: set[str]) -> None:
    stray = [n for n in wheel_names if not n.startswith(("crontick/", "crontick-"))]
    assert stray == []


@pytest.mark.skipif(os.environ.get("CRONTICK_TEST_INSTALLED") != "wheel", reason="only when .ci/run tests the wheel")
def test_the_suite_imports_the_installed_wheel_not_the_checkout() -> None:
    here = Path(crontick.__file__).resolve()
    assert not here.is_relative_to(ROOT / "lib"), f"expected crontick from site-packages, got: {here}"
    assert "site-packages" in here.parts
    assert (here.parent / "sql" / "migrations").is_dir()
    assert (here.parent / "sql" / "functions").is_dir()
