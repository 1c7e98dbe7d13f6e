"""An alert endpoint answering with a decompression bomb or NUL bytes: the alert is retried, the tick answers 200."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from werkzeug import Response

import crontick
from tests.support import (
    bombs,
    core_jobs,  # noqa: F401  (registers the t_core.* job types)
)
from tests.support.http_checks import LiveApp
from tests.support.reminders import Provider, Received
from tests.support.waking import posted_tick
from tests.tick.alerts_support import alert_settings, alerts, received_alerts

REFUSED = "expected an answer with no Content-Encoding or one layer of gzip or deflate, got: 'gzip, gzip'"


@pytest.mark.parametrize(
    ("answer", "error_ends"),
    [
        (bombs.stacked_bomb, f"answered HTTP 503: ({REFUSED}; its body was not read)"),
        (bombs.single_bomb, "answered HTTP 503: " + "\ufffd" * 500),
        (bombs.nul_bytes, "answered HTTP 503: " + "\ufffd" * 100),
    ],
)
def test_an_odd_answer_leaves_the_alert_pending_with_its_reason(
    live_app: LiveApp,
    database_url: str,
    conn: psycopg.Connection[Any],
    receiver: Provider,
    answer: Any,
    error_ends: str,
) -> None:
    bombs.stacked_gzip(), bombs.single_gzip()  # built before the receiver's thread needs them
    sent = answer(503)

    def behave(received: Received, n: int) -> Response:
        return sent

    receiver.behave = behave
    crontick.enqueue(conn, "t_core.fail", {}, max_attempts=1)
    with live_app(alert_settings(database_url, receiver)) as url:
        assert posted_tick(url)["jobs"]["failed"] == 1
    assert len(received_alerts(receiver)) == 1
    [row] = alerts(conn)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert row["last_error"].startswith("DeliveryFailed: alert webhook 127.0.0.1:")
    assert row["last_error"].endswith(error_ends)
