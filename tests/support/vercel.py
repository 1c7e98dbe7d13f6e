"""Loading an api/ file as Vercel's Python runtime does (by path, under a private name), from a cold instance."""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import Any

import pytest

from tests.support.constants import ROOT


def load_vercel_function(relative_path: str) -> ModuleType:
    """What Vercel's Python runtime does with an api/ file: import it by path under a private name."""
    spec = importlib.util.spec_from_file_location("__vc_module", ROOT / relative_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fresh_app(module: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The function's app as a cold instance has it: built lazily on first use, so forget any earlier one."""
    monkeypatch.setattr(module.app, "_app", None)
    return module.app
