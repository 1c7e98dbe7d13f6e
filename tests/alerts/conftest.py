"""Fixtures for the alert tests: a real HTTP server on 127.0.0.1 receiving the alerts."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from pytest_httpserver import HTTPServer

from crontick import retention, upkeep
from tests.reminders.support import Provider


@pytest.fixture(scope="session")
def receiver_server() -> Iterator[Provider]:
    """One threaded server for the session (stopping one takes half a second); each test gets it reset."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield Provider(server)
    finally:
        server.clear()
        server.stop()


@pytest.fixture
def receiver(receiver_server: Provider, monkeypatch: pytest.MonkeyPatch) -> Provider:
    receiver_server.reset()
    retention.reset()
    monkeypatch.setattr(upkeep, "_last_finished_at", None)  # this process has not ticked: silences are checked
    return receiver_server
