"""Attacker text in an alert: links and mentions defused in the one-line `text`, readable, and what Slack escapes escaped."""

from __future__ import annotations

import json
from typing import Any

import httpx
import psycopg
import pytest
from werkzeug import Response

import crontick
from crontick.tick import alerts
from tests.support.http_checks import AUTH, TICK, LiveApp
from tests.support.reminders import Provider, Received
from tests.tick.alerts_support import ALERT_PATH, alert_settings, received_alerts, verified
from tests.tick.alerts_support import alerts as alert_rows

EVIL = (
    "@channel <!here> @everyone urgent: sign in again at https://evil.example/login?next=%2F or "
    "www.evil.example, [this link](https://evil.example/x) &amp; mail ops@evil.example"
)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("see https://evil.example/login", "see https[:]//evil[.]example/login"),
        ("HTTP://EVIL.EXAMPLE", "HTTP[:]//EVIL[.]EXAMPLE"),
        ("go to evil.example now", "go to evil[.]example now"),
        ("www.evil.co.uk", "www[.]evil[.]co[.]uk"),
        ("@channel @here @everyone @all @alice", "[@]channel [@]here [@]everyone [@]all [@]alice"),
        ("ops@evil.example", "ops[@]evil[.]example"),
        ("[click](https://x.example)", "[click] (https[:]//x[.]example)"),
        # Left alone: what cannot link or notify, so the error stays readable.
        ('took 1.5 s, v1.2.3, HTTP 400: {"error": "nope"}', 'took 1.5 s, v1.2.3, HTTP 400: {"error": "nope"}'),
        ("a @ b, e-mail me", "a @ b, e-mail me"),
    ],
)
def test_defused(raw: str, shown: str) -> None:
    assert alerts.defused(raw) == shown


def test_the_text_of_a_job_alert_links_and_mentions_nothing() -> None:
    body = {"job_id": 7, "job_type": "t_core.fail", "attempts": 1, "error": EVIL}
    line = alerts.text("job_failed", body)
    assert line.startswith("crontick: job 7 (t_core.fail) failed for good after 1 attempt: ")  # our own text: as is
    assert_defused(line)
    reminder = alerts.text("reminder_failed", {"booking_id": "@here evil.example", "kind": "24h", "error": "x"})
    assert "booking [@]here evil[.]example failed" in reminder


def assert_defused(line: str) -> None:
    for live in ("@channel", "@here", "@everyone", "<!here>", "https://", "evil.example", "](", "ops@"):
        assert live not in line, (live, line)
    assert "&lt;!here&gt;" in line and "&amp;amp;" in line  # Slack's escaping: &, < and >
    assert "[@]channel" in line and "https[:]//evil[.]example/login" in line  # still readable


@pytest.fixture
def allow_private() -> None:
    """The receiver listens on 127.0.0.1: the settings given to the app allow it (webhook_deny_private=False)."""


def test_a_receivers_4xx_body_reaches_the_chat_defused(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], receiver: Provider, allow_private: None
) -> None:
    def behave(received: Received, n: int) -> Response:
        if received.path == "/victim":  # the webhook job's receiver, whoever controls it
            return Response(json.dumps({"message": EVIL}), 400, content_type="application/json")
        return Response("ok", 200, content_type="text/plain")  # the chat's alert webhook

    receiver.behave = behave
    job_id = crontick.enqueue(conn, "webhook", {"url": receiver.url + "/victim", "json": {"n": 1}})
    with live_app(alert_settings(database_url, receiver, webhook_deny_private=False)) as url:
        assert httpx.post(url + TICK, headers=AUTH, timeout=30).json()["jobs"]["failed"] == 1
        httpx.post(url + TICK, headers=AUTH, timeout=30)
    [sent] = received_alerts(receiver)
    assert sent.path == ALERT_PATH
    body = verified(sent)
    assert body["job_id"] == job_id and "@channel" in body["error"]  # the raw error, for receivers of your own
    assert_defused(body["text"])
    [row] = alert_rows(conn)
    assert row["status"] == "sent"
