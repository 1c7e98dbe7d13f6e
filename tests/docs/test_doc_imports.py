"""Every `from crontick… import …` in the docs' and README's code blocks imports what it names (issue 38, finding 7:
getting-started imported `crontick.embedded`, moved to `crontick.db.embedded`).

Only the imports run here, offline; the rest of each block is not (a first step towards running every block).
"""

from __future__ import annotations

import importlib
import re

import pytest

from tests.support.constants import ROOT

PAGES = sorted([*ROOT.joinpath("docs").rglob("*.md"), ROOT / "README.md"])
BLOCK = re.compile(r"^```[a-z]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
IMPORT = re.compile(r"\bfrom (crontick[\w.]*) import ([\w, ]+)")


def imports() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        for block in BLOCK.findall(page.read_text(encoding="utf-8")):
            for module, names in IMPORT.findall(block):
                for name in (n.split(" as ")[0].strip() for n in names.split(",")):
                    if name:
                        found.append((page.relative_to(ROOT).as_posix(), module, name))
    return sorted(set(found))


@pytest.mark.parametrize(("page", "module", "name"), imports())
def test_a_documented_import_imports(page: str, module: str, name: str) -> None:
    imported = importlib.import_module(module)
    assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}") is not None, (
        f"{page}: from {module} import {name}"
    )
