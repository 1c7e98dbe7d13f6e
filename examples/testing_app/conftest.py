"""The app's fixtures: crontick's plugin makes a migrated database per test; the handlers enqueue through DATABASE_URL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import shop

pytest_plugins = ["crontick.testing.plugin"]


@pytest.fixture(autouse=True)
def app_database(crontick_database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DATABASE_URL", crontick_database_url)  # where the app's own code connects
    shop.payments.reset()  # a fresh provider per test
    yield
