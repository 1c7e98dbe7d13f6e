"""The smtp channel against a real SMTP server on loopback (aiosmtpd): the message it sends, STARTTLS with a login,
and how each way a submission can end is recorded (4xx retried, 5xx failed at once, a drop after DATA unknown)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from crontick.channels.message import message_id
from tests.channels.sending import TEXT
from tests.support import smtp
from tests.support.reminders import NOW, add_bookings, make_settings, send_of, settings_values, tick

SENDER = "Clinic <reminders@clinic.example>"


def book(conn: psycopg.Connection[Any]) -> str:
    [booking] = add_bookings(
        conn,
        [
            (
                "Zoë Ångström",
                "zoe@example.com",
                None,
                NOW + timedelta(hours=20, minutes=30),
                "Europe/Amsterdam",
                "confirmed",
            )
        ],
    )
    return booking


def smtp_tick(database_url: str, port: int, **changes: Any) -> Any:
    values = settings_values(database_url, "http://127.0.0.1:9", "smtp", smtp_host="127.0.0.1", smtp_port=port)
    values.update({"smtp_starttls": False, **changes})
    return tick(database_url, make_settings(values), NOW)


@pytest.fixture
def relay() -> Iterator[tuple[int, smtp.Recorder]]:
    with smtp.smtp_server() as server:
        yield server


def test_a_reminder_goes_out_as_one_mime_message_with_a_message_id_from_its_key(
    database_url: str, conn: psycopg.Connection[Any], relay: tuple[int, smtp.Recorder]
) -> None:
    port, server = relay
    booking = book(conn)
    assert smtp_tick(database_url, port).reminders.sent == 1
    [taken] = server.taken
    assert (taken.mail_from, taken.rcpt_tos) == ("reminders@clinic.example", ["zoe@example.com"])
    mail = taken.message
    assert mail["From"] == SENDER and mail["To"] == "zoe@example.com"
    assert mail["Subject"] == "Reminder: your appointment tomorrow at 09:30"
    assert mail["Message-ID"] == message_id(f"reminder:{booking}:24h", SENDER)
    assert mail["Message-ID"].endswith("@clinic.example>") and mail["Idempotency-Key"] == f"reminder:{booking}:24h"
    assert not mail.is_multipart() and mail.get_content().strip() == TEXT
    assert send_of(conn, booking)["status"] == "sent"


def test_an_html_template_adds_an_autoescaped_html_part_beside_the_text(
    database_url: str, conn: psycopg.Connection[Any], relay: tuple[int, smtp.Recorder]
) -> None:
    port, server = relay
    booking = book(conn)
    conn.execute("update bookings set customer_name = '<b>Zoë</b> Ångström' where id::text = %s", (booking,))
    html = "<p>Hi {{ first_name }}, see you {{ day }} at {{ time }}.</p>"
    assert smtp_tick(database_url, port, reminder_html_template=html).reminders.sent == 1
    mail = server.taken[0].message
    assert mail.get_content_type() == "multipart/alternative"
    text, page = (part.get_content() for part in mail.iter_parts())
    assert "Hi <b>Zoë</b>, a reminder" in text  # the text part is plain text: nothing to escape
    assert page.strip() == "<p>Hi &lt;b&gt;Zoë&lt;/b&gt;, see you tomorrow at 09:30.</p>"


def test_a_5xx_reply_fails_the_reminder_at_once(
    database_url: str, conn: psycopg.Connection[Any], relay: tuple[int, smtp.Recorder]
) -> None:
    port, server = relay
    server.rcpt_reply = "550 5.1.1 no such mailbox"
    booking = book(conn)
    assert smtp_tick(database_url, port).reminders.failed == 1
    row = send_of(conn, booking)
    assert (row["status"], row["next_attempt_at"]) == ("failed", None)
    assert "550 5.1.1 no such mailbox" in row["last_error"] and "RCPT TO <zoe@example.com>" in row["last_error"]


def test_a_4xx_reply_to_the_message_is_retried_later(
    database_url: str, conn: psycopg.Connection[Any], relay: tuple[int, smtp.Recorder]
) -> None:
    port, server = relay
    server.data_reply = "451 4.3.0 try again later"
    booking = book(conn)
    assert smtp_tick(database_url, port).reminders.retried == 1
    row = send_of(conn, booking)
    assert row["status"] == "failed" and row["next_attempt_at"] is not None and not row["maybe_delivered"]
    assert "451 4.3.0 try again later" in row["last_error"]


def test_a_refused_connection_is_retried_and_nothing_was_sent(database_url: str, conn: psycopg.Connection[Any]) -> None:
    booking = book(conn)
    assert smtp_tick(database_url, smtp.free_port()).reminders.retried == 1
    row = send_of(conn, booking)
    assert row["next_attempt_at"] is not None and "nothing was sent" in row["last_error"]


def test_a_drop_after_the_message_is_unknown_and_never_resent(
    database_url: str, conn: psycopg.Connection[Any], relay: tuple[int, smtp.Recorder]
) -> None:
    port, server = relay
    server.drop_after_data = True
    booking = book(conn)
    assert smtp_tick(database_url, port).reminders.unknown == 1
    row = send_of(conn, booking)
    assert (row["status"], row["maybe_delivered"], row["next_attempt_at"]) == ("unknown", True, None)
    assert "may have been delivered" in row["last_error"]
    assert len(server.taken) == 1


def test_starttls_with_a_login_and_a_server_without_starttls_is_refused(
    database_url: str,
    conn: psycopg.Connection[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    relay: tuple[int, smtp.Recorder],
) -> None:
    cert, key = smtp.self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts the self-signed certificate, as a CA
    login = {"smtp_starttls": True, "smtp_username": smtp.USERNAME, "smtp_password": smtp.PASSWORD}
    booking = book(conn)
    with smtp.smtp_server(tls_files=(cert, key)) as (port, server):
        assert smtp_tick(database_url, port, **login).reminders.sent == 1
        [taken] = server.taken
        assert taken.message["Subject"] == "Reminder: your appointment tomorrow at 09:30"
    conn.execute("delete from reminder_sends")
    plain_port, _ = relay  # offers no STARTTLS: refused, never sent in the clear
    assert smtp_tick(database_url, plain_port, **login).reminders.failed == 1
    assert "expected STARTTLS" in send_of(conn, booking)["last_error"]
