"""Fixtures for the deploy tests: a host's environment, the no-op job type, the local OIDC issuer."""

from __future__ import annotations

import pytest

from tests.deploy import jobs  # noqa: F401 (registers the no-op job type)
from tests.support.constants import TEST_SECRET
from tests.support.databases import url_of


@pytest.fixture
def host_env(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment a Vercel project or Lambda function sets; the app reads it when first used."""
    for name in (
        "QSTASH_CURRENT_SIGNING_KEY",
        "CRONTICK_GITHUB_OIDC_REPOSITORY",
        "CRONTICK_PUBLIC_URL",
        "CRONTICK_HANDLERS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", url_of(database_url))
    monkeypatch.setenv("CRON_SECRET", TEST_SECRET)
    monkeypatch.setenv("CRONTICK_BATCH_SIZE", str(jobs.BATCH_SIZE))
