"""The app over real HTTP with a waker (CRONTICK_WAKER=qstash) through the QStash stand-in, which calls back the
app's own tick: the wake-up tests of tests/tick and tests/wakers share it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from crontick.app import create_app
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.credentials import QSTASH_CURRENT, QSTASH_NEXT
from tests.support.http_checks import AUTH, TICK
from tests.support.qstash_server import QStashStandIn, qstash_stand_in
from tests.support.servers import free_port, serve

TOKEN = "qstash-token-for-the-stand-in"  # what the QStash stand-in takes from the app


def settings_for(url: str, **changes: Any) -> Settings:
    return Settings(database_url=url, cron_secret=TEST_SECRET, reminder_channel="console", **changes)


@contextmanager
def waking_app(database_url: str, **changes: Any) -> Iterator[tuple[str, QStashStandIn]]:
    """The app over HTTP with CRONTICK_WAKER=qstash through the stand-in, which calls back the app's own tick."""
    port = free_port()
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = settings_for(database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                                qstash_current_signing_key=QSTASH_CURRENT, qstash_next_signing_key=QSTASH_NEXT,
                                public_url=f"http://127.0.0.1:{port}", **changes)  # fmt: skip
        with serve(create_app(settings), port=port) as url:
            yield url, stand_in


def posted_tick(url: str) -> dict[str, Any]:
    """POST the app's tick with the cron secret; its JSON answer (a 200 is asserted)."""
    response = httpx.post(url + TICK, headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body
