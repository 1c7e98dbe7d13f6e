"""Fixtures for the CLI's tests: the environment the installed script runs in, on this test's database."""

from __future__ import annotations

import pytest

from tests.support.run_cli import cli_env


@pytest.fixture
def env(database_url: str) -> dict[str, str]:
    return cli_env(database_url)
