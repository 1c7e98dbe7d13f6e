"""Hostile or odd provider answers: decompression bombs and NUL bytes end as recorded outcomes, never a failed tick."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import psycopg
from werkzeug import Response

from tests.support import bombs
from tests.support.reminders import NOW, Provider, Received, add_bookings, send_of, settings_for, tick

REFUSED = "expected an answer with no Content-Encoding or one layer of gzip or deflate, got: 'gzip, gzip'"


def two_bookings(conn: psycopg.Connection[Any]) -> list[int]:
    starts = NOW + timedelta(hours=20)
    return add_bookings(
        conn,
        [
            ("Ada Lovelace", "ada@example.com", "+31612345678", starts, "Europe/Amsterdam", "confirmed"),
            ("Alan Turing", "alan@example.com", "+31612345679", starts, "Europe/London", "confirmed"),
        ],
    )


def by_recipient(answers: dict[str, Response]) -> Any:
    """Answer each reminder by whom it is for (email `to`, or the webhook's booking email)."""

    def behave(received: Received, n: int) -> Response:
        body = received.json
        to = body["to"][0] if "to" in body else body["data"]["booking"]["email"]
        return answers[to]

    return behave


def test_bombs_in_error_answers_are_recorded_as_retries(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    ada, alan = two_bookings(conn)
    bombs.stacked_gzip(), bombs.single_gzip()  # built before the provider's thread needs them
    provider.behave = by_recipient(
        {"ada@example.com": bombs.stacked_bomb(503), "alan@example.com": bombs.single_bomb(500)}
    )
    result = tick(database_url, settings_for(database_url, provider, "webhook"), NOW)
    assert (result.reminders.sent, result.reminders.retried) == (0, 2)
    row = send_of(conn, ada)
    assert (row["status"], row["attempts"]) == ("failed", 1) and row["next_attempt_at"] is not None
    assert f"answered HTTP 503: ({REFUSED}; its body was not read)" in row["last_error"]
    row = send_of(conn, alan)
    assert row["last_error"].endswith("answered HTTP 500: " + "\ufffd" * 500)  # the bomb's zeros, made storable


def test_a_2xx_with_a_bomb_or_a_nul_in_its_id_is_sent(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    ada, alan = two_bookings(conn)
    provider.behave = by_recipient(
        {
            "ada@example.com": bombs.stacked_bomb(200),  # unread: no message id, still delivered
            "alan@example.com": Response(json.dumps({"id": "re_\u0000\ud800" + "9" * 500}), 200),
        }
    )
    result = tick(database_url, settings_for(database_url, provider, "email"), NOW)
    assert result.reminders.sent == 2
    row = send_of(conn, ada)
    assert (row["status"], row["provider_message_id"]) == ("sent", None)
    row = send_of(conn, alan)
    assert row["status"] == "sent" and row["provider_message_id"] == "re_\ufffd\ufffd" + "9" * 194 + "…"


def test_nul_bytes_in_an_error_answer_are_recorded(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    ada, alan = two_bookings(conn)
    provider.behave = by_recipient({"ada@example.com": bombs.nul_bytes(422), "alan@example.com": bombs.nul_bytes(500)})
    result = tick(database_url, settings_for(database_url, provider, "email"), NOW)
    assert (result.reminders.failed, result.reminders.retried) == (1, 1)
    assert send_of(conn, ada)["last_error"].endswith("answered HTTP 422: " + "\ufffd" * 100)
    assert send_of(conn, alan)["last_error"].endswith("answered HTTP 500: " + "\ufffd" * 100)
