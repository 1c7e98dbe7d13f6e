"""Fixtures for the retention tests: each starts with retention's per-process quiet period forgotten."""

from __future__ import annotations

import pytest

from crontick.tick import retention


@pytest.fixture(autouse=True)
def retention_not_quiet() -> None:
    retention.reset()
