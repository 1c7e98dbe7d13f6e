"""Fixtures for the alert tests: a real HTTP server on 127.0.0.1 receiving the alerts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crontick.tick import pacing, retention
from tests.support.reminders import Provider, recording_server


@pytest.fixture(scope="session")
def receiver_server() -> Iterator[Provider]:
    """A recording server of its own for the session (not the reminders' provider); each test gets it reset."""
    with recording_server() as server:
        yield server


@pytest.fixture
def receiver(receiver_server: Provider, monkeypatch: pytest.MonkeyPatch) -> Provider:
    receiver_server.reset()
    retention.reset()
    monkeypatch.setattr(pacing.PROCESS, "last_finished_at", None)  # this process has not ticked: silences are checked
    return receiver_server
