"""When a send fails: definite failures retry with backoff, 4xx fail with the provider's message, timeouts follow the rule."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

import psycopg
from werkzeug import Response

from crontick import db
from crontick.reminders import send
from tests.support.reminders import (
    NOW,
    Provider,
    add_bookings,
    add_due,
    fail_first,
    later,
    ok,
    send_of,
    sends,
    settings_for,
    slow,
    tick,
)
from tests.support.servers import free_port


def one_booking(conn: psycopg.Connection[Any]) -> int:
    [booking] = add_bookings(
        conn,
        [
            (
                "Ada Lovelace",
                "ada@example.com",
                "+31612345678",
                NOW + timedelta(hours=21, minutes=30),
                "Europe/Amsterdam",
                "confirmed",
            )
        ],
    )
    return booking


def test_provider_500_is_retried_on_a_later_tick_then_succeeds(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    provider.behave = fail_first(1)
    settings = settings_for(database_url, provider, "email")

    first = tick(database_url, settings, NOW)
    assert (first.reminders.sent, first.reminders.retried) == (0, 1)
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["locked_until"]) == ("failed", 1, None)
    assert NOW + timedelta(seconds=48) <= row["next_attempt_at"] <= NOW + timedelta(seconds=73)  # 1 min ± 20 %
    assert "email answered HTTP 500: " in row["last_error"]

    assert tick(database_url, settings, later(0.5)).reminders.sent == 0  # not due yet: no request
    assert len(provider.requests) == 1
    assert tick(database_url, settings, later(2)).reminders.sent == 1
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["next_attempt_at"], row["last_error"]) == ("sent", 2, None, None)
    assert [r.key for r in provider.requests] == [f"reminder:{booking}:24h"] * 2


def test_sms_500_is_a_definite_failure_so_it_is_retried_too(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    provider.behave = fail_first(1, status=503)
    settings = settings_for(database_url, provider, "sms")
    assert tick(database_url, settings, NOW).reminders.retried == 1
    assert tick(database_url, settings, later(2)).reminders.sent == 1
    assert send_of(conn, booking)["status"] == "sent" and len(provider.requests) == 2


def test_provider_400_fails_at_once_with_the_providers_message(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    body = {
        "statusCode": 422,
        "name": "validation_error",
        "message": "Invalid `to` field. The email address needs to follow the `email@example.com` format.",
    }
    provider.behave = lambda r, n: Response(json.dumps(body), 422, content_type="application/json")
    settings = settings_for(database_url, provider, "email")

    assert tick(database_url, settings, NOW).reminders.failed == 1
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["next_attempt_at"]) == ("failed", 1, None)
    assert row["last_error"].startswith(f"booking {booking}: email answered HTTP 422: ")
    assert "Invalid `to` field." in row["last_error"]
    for minutes in (2, 10, 60):
        tick(database_url, settings, later(minutes))
    assert len(provider.requests) == 1  # never retried


def test_the_last_attempt_leaves_the_reminder_failed_and_visible(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    provider.behave = fail_first(100, status=502)
    settings = settings_for(database_url, provider, "email")
    for minutes in (0, 2, 10, 50, 120):
        tick(database_url, settings, later(minutes))
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["next_attempt_at"]) == ("failed", 4, None)
    assert "HTTP 502" in row["last_error"] and len(provider.requests) == 4


def test_connection_refused_is_definite_and_retried(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    nobody = f"http://127.0.0.1:{free_port()}"
    assert (
        tick(database_url, settings_for(database_url, provider, "sms", twilio_api_url=nobody), NOW).reminders.retried
        == 1
    )
    row = send_of(conn, booking)
    assert row["status"] == "failed" and row["next_attempt_at"] is not None
    assert "ConnectError" in row["last_error"] and "nothing was sent" in row["last_error"]
    assert tick(database_url, settings_for(database_url, provider, "sms"), later(2)).reminders.sent == 1


def test_timeout_on_email_is_retried_under_the_same_idempotency_key(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    provider.behave = slow(2.0)
    settings = settings_for(database_url, provider, "email", delivery_timeout_seconds=1.0)

    assert tick(database_url, settings, NOW).reminders.retried == 1
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert "ReadTimeout" in row["last_error"] and "it may have been delivered" in row["last_error"]

    provider.behave = ok
    assert tick(database_url, settings, later(2)).reminders.sent == 1
    assert send_of(conn, booking)["status"] == "sent"
    first, second = provider.requests
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"] == f"reminder:{booking}:24h"
    assert first.body == second.body  # the same bytes, so the provider can honour the key


def test_timeout_on_sms_ends_unknown_and_is_never_resent(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    provider.behave = slow(2.0)
    settings = settings_for(database_url, provider, "sms", delivery_timeout_seconds=1.0)

    assert tick(database_url, settings, NOW).reminders.unknown == 1
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["next_attempt_at"]) == ("unknown", 1, None)
    assert (
        "ReadTimeout" in row["last_error"] and "not resent: the sms channel has no idempotency key" in row["last_error"]
    )
    provider.behave = ok
    for minutes in (2, 10, 60):
        tick(database_url, settings, later(minutes))
    assert len(provider.requests) == 1


def test_a_reminder_that_may_have_gone_out_never_ends_failed(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    """A timeout (the provider may have delivered), then 500s until the last attempt: 'unknown', not 'failed'."""
    booking = one_booking(conn)
    provider.behave = slow(2.0)
    settings = settings_for(database_url, provider, "email", delivery_timeout_seconds=1.0)
    tick(database_url, settings, NOW)
    provider.behave = fail_first(100)
    for minutes in (2, 10, 50):
        tick(database_url, settings, later(minutes))
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["maybe_delivered"], row["next_attempt_at"]) == (
        "unknown",
        4,
        True,
        None,
    )
    assert "HTTP 500" in row["last_error"] and len(provider.requests) == 4


def test_a_retry_due_after_the_booking_was_cancelled_is_not_sent(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    provider.behave = fail_first(1)
    settings = settings_for(database_url, provider, "email")
    tick(database_url, settings, NOW)
    conn.execute("update bookings set status = 'cancelled' where id = %s", (booking,))

    assert tick(database_url, settings, later(2)).reminders.failed == 1
    row = send_of(conn, booking)
    assert (row["status"], row["next_attempt_at"]) == ("failed", None)
    assert row["last_error"].endswith("(not retried: the booking was cancelled)")
    assert len(provider.requests) == 1


def test_a_retry_after_a_timeout_whose_booking_was_cancelled_ends_unknown(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    provider.behave = slow(2.0)
    tick(database_url, settings_for(database_url, provider, "email", delivery_timeout_seconds=1.0), NOW)
    conn.execute("update bookings set status = 'cancelled' where id = %s", (booking,))
    assert tick(database_url, settings_for(database_url, provider, "email"), later(2)).reminders.unknown == 1
    row = send_of(conn, booking)
    assert (row["status"], row["next_attempt_at"]) == ("unknown", None)
    assert "ReadTimeout" in row["last_error"] and row["last_error"].endswith("(not retried: the booking was cancelled)")
    assert len(provider.requests) == 1


SLOW_PROVIDER_SECONDS = 5.0  # answers this long after a request arrives: long past the budget below, even under load
CUT_BUDGET_SECONDS = 1.0


def test_a_send_cut_at_the_time_budget_is_retried_and_the_tick_says_when(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    """The eight-process race's short ends, one send at a time: the budget cuts a send mid-call; the
    drain at the same `now` ends with `more: false` and `next_due_at` at its retry, and a tick then sends it."""
    booking = one_booking(conn)
    provider.behave = slow(SLOW_PROVIDER_SECONDS)
    settings = settings_for(database_url, provider, "email", time_budget_seconds=CUT_BUDGET_SECONDS)

    cut = tick(database_url, settings, NOW)
    assert (cut.reminders.sent, cut.reminders.retried, cut.more) == (0, 1, True), cut.reminders  # out of time
    assert cut.duration_ms < SLOW_PROVIDER_SECONDS * 1000, "the provider may have answered before the cut"
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["maybe_delivered"]) == ("failed", 1, True)
    # Cut by the budget, or by the HTTP timeout that the budget left capped at the same instant: both ambiguous.
    assert any(why in row["last_error"] for why in ("at the tick's time budget", "it may have been delivered"))
    retry_at = row["next_attempt_at"]
    assert NOW + timedelta(seconds=48) <= retry_at <= NOW + timedelta(seconds=75)  # 1 min ± 20 %, after the cut

    drained = [tick(database_url, settings, NOW) for _ in range(2)]  # what a drain at a fixed `now` answers next
    assert [(t.reminders.sent, t.reminders.more, t.next_due_at) for t in drained] == [(0, False, retry_at)] * 2

    provider.behave = ok
    assert tick(database_url, settings, retry_at).reminders.sent == 1
    assert tick(database_url, settings, retry_at + timedelta(minutes=5)).reminders.sent == 0
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["next_attempt_at"]) == ("sent", 2, None)
    # The cut request reached the provider and was never answered; the retry is the same request.
    first, second = provider.requests
    assert first.key == second.key == f"reminder:{booking}:24h" and first.body == second.body


def send_due_with_clock(
    database_url: str, settings: Any, readings: list[float], deadline: float, now: datetime = NOW
) -> send.ReminderCounts:
    """send_due with a clock that returns `readings` in turn, then the last one for ever."""
    values = iter(readings)
    last = readings[-1]

    async def go() -> send.ReminderCounts:
        c = await db.connect(database_url)
        try:
            return await send.send_due(c, settings, now=now, deadline=deadline, clock=lambda: next(values, last))
        finally:
            await c.close()

    return asyncio.run(go())


def test_out_of_time_releases_unstarted_claims_for_the_next_tick(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    ids = add_due(conn, 5)
    settings = settings_for(database_url, provider, "email")
    # Time is left at the start, so the batch is claimed; the deadline passes before any send starts.
    counts = send_due_with_clock(database_url, settings, [0.0, 10.0], deadline=5.0)
    assert counts.more and counts.sent == 0 and provider.requests == []
    assert sends(conn) == []  # first attempts are un-claimed, as if never claimed
    assert tick(database_url, settings, NOW).reminders.sent == 5
    assert sorted(provider.keys()) == sorted(f"reminder:{i}:24h" for i in ids)


def test_a_send_starts_only_while_the_start_floor_is_left_of_the_budget(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    """A send started on the budget's last moments could be cut mid-call (on SMS: `unknown`, never resent), so
    it is released, no attempt spent; with the floor left it goes out."""
    add_due(conn, 1, phone=True)
    settings = settings_for(database_url, provider, "sms")
    floor = send.start_floor(settings)
    assert floor == send.SEND_START_SECONDS  # the defaults: a 10 s delivery timeout, an 8 s budget
    # The clock: send_due's start, send_all's start, then the send's own reading.
    counts = send_due_with_clock(database_url, settings, [0.0, 0.0, 5.0 - floor + 0.1], deadline=5.0)
    assert (counts.more, counts.sent, provider.requests) == (True, 0, [])
    assert sends(conn) == []  # a first attempt un-claimed, as if never claimed
    counts = send_due_with_clock(database_url, settings, [0.0, 0.0, 5.0 - floor - 0.1], deadline=5.0)
    assert (counts.sent, len(provider.requests)) == (1, 1) and [r["status"] for r in sends(conn)] == ["sent"]


def test_no_claim_with_less_than_the_start_floor_left(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    add_due(conn, 2)
    settings = settings_for(database_url, provider)
    counts = send_due_with_clock(database_url, settings, [5.0 - send.start_floor(settings) + 0.1], deadline=5.0)
    assert counts.more and sends(conn) == [] and provider.requests == []


def test_a_short_budget_or_timeout_lowers_the_start_floor(database_url: str, provider: Provider) -> None:
    short = settings_for(database_url, provider, time_budget_seconds=1.0)
    quick = settings_for(database_url, provider, delivery_timeout_seconds=0.5)
    assert (send.start_floor(short), send.start_floor(quick)) == (0.5, 0.5)


def test_a_released_retry_goes_back_to_its_due_retry(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    provider.behave = fail_first(1)
    settings = settings_for(database_url, provider, "email")
    tick(database_url, settings, NOW)
    before = send_of(conn, booking)
    # Claims the due retry (attempt 2), then has no time to send it.
    counts = send_due_with_clock(database_url, settings, [0.0, 10.0], deadline=5.0, now=later(2))
    assert counts.more and len(provider.requests) == 1
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["last_error"]) == ("failed", 1, before["last_error"])
    assert row["next_attempt_at"] == later(2) + timedelta(seconds=10)  # due again at once (when the tick recorded it)
    assert tick(database_url, settings, later(3)).reminders.sent == 1 and send_of(conn, booking)["attempts"] == 2


def test_no_time_left_claims_nothing(database_url: str, conn: psycopg.Connection[Any], provider: Provider) -> None:
    add_due(conn, 3)
    counts = send_due_with_clock(database_url, settings_for(database_url, provider), [6.0], deadline=5.0)
    assert counts.more and sends(conn) == [] and provider.requests == []


def test_an_outcome_from_a_tick_that_lost_its_claim_is_fenced_off(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    booking = one_booking(conn)
    settings = settings_for(database_url, provider, "email")

    async def claim_then_lose() -> set[int]:
        c = await db.connect(database_url)
        try:
            [claimed], _ = await send.claim(c, settings, NOW)
            conn.execute(
                "update reminder_sends set attempts = 2 where id = %s", (claimed.id,)
            )  # another tick took over
            written: set[int] = await send.record(c, [send.Outcome(claimed.id, 1, "sent")], NOW)
            return written
        finally:
            await c.close()

    assert asyncio.run(claim_then_lose()) == set()
    row = send_of(conn, booking)
    assert (row["status"], row["attempts"], row["sent_at"]) == ("sending", 2, None)
