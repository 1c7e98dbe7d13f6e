"""Fixtures for the reminder tests: a real, threaded HTTP server on 127.0.0.1 playing the providers."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from pytest_httpserver import HTTPServer

from tests.reminders.support import Provider


@pytest.fixture(scope="session")
def provider_server() -> Iterator[Provider]:
    """One server for the session (stopping one takes half a second); each test gets it reset."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one INFO line per request slows the server
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield Provider(server)
    finally:
        server.clear()
        server.stop()


@pytest.fixture
def provider(provider_server: Provider) -> Provider:
    provider_server.reset()
    return provider_server
