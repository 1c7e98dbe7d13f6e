"""docs/development.md's maps stay true: every package and top-level module of lib/crontick, and every folder of tests/, is in them, nothing gone is."""

from __future__ import annotations

import re

from tests.support.constants import ROOT

LIB = ROOT / "lib" / "crontick"


def _rooms() -> set[str]:
    """The map's first column: `app.py`, `db/`, … (one cell may name two, `aws.py`, `vercel.py`)."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = text[text.index("## Layout") : text.index("Outside the library:")]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([\w.]+/?)`", row.split("|")[1])}


def _on_disk() -> set[str]:
    modules = {p.name for p in LIB.glob("*.py") if p.name != "__init__.py"}
    packages = {f"{p.name}/" for p in LIB.iterdir() if (p / "__init__.py").exists()}
    return modules | packages


def test_every_package_and_top_level_module_is_on_the_map() -> None:
    assert _on_disk() - _rooms() == set()


def test_the_map_names_nothing_that_is_gone() -> None:
    assert _rooms() - _on_disk() == set()


def test_lib_crontick_has_at_most_16_modules_and_none_over_400_lines() -> None:
    assert len(list(LIB.glob("*.py"))) <= 16
    long = {str(p.relative_to(LIB)): n for p in LIB.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def _test_folders_on_the_map() -> set[str]:
    """The first column of the Tests section's table: `tests/unit`, … (one cell may name two)."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = text[text.index("## Tests") : text.index("## Lint, types and docs")]
    rows = [line for line in section.splitlines() if line.startswith("| `tests/")]
    return {name for row in rows for name in re.findall(r"`tests/(\w+)`", row.split("|")[1])}


def test_every_test_folder_is_on_the_tests_map_and_nothing_gone_is() -> None:
    on_disk = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert on_disk == _test_folders_on_the_map()
