"""A handler that retries, sleeps and enqueues a follow-up, tested with crontick.testing: no server, no waiting."""

from __future__ import annotations

from typing import Any

import psycopg
from shop import payments

import crontick
from crontick.testing import advance, drain, enqueued


def test_an_order_is_charged_once_despite_an_outage_and_gets_its_receipt_an_hour_later(
    crontick_conn: psycopg.Connection[Any],
) -> None:
    payments.failures_left = 1
    crontick.enqueue(crontick_conn, "charge_order", {"order_id": 7, "cents": 1200})

    summary = drain(crontick_conn)  # the provider is down: the attempt fails, a retry is booked
    assert summary["jobs"]["retried"] == 1
    [order] = enqueued(crontick_conn, "charge_order")
    assert (order["status"], order["attempts"]) == ("pending", 1)

    assert drain(crontick_conn)["jobs"]["claimed"] == 0  # the retry is not due yet: drain does not wait
    advance(crontick_conn, 5 * 60)  # past the first retry (1 minute, give or take 20 %)
    drain(crontick_conn)  # charged; then the handler sleeps for an hour
    assert payments.charged == [7]
    assert enqueued(crontick_conn, "send_receipt") == []

    advance(crontick_conn, 3600)
    summary = drain(crontick_conn)  # the charge step is not run again; the receipt job runs in the same drain
    assert payments.charged == [7]
    assert payments.receipts == [7]
    [receipt] = enqueued(crontick_conn, "send_receipt")
    assert (receipt["payload"], receipt["status"]) == ({"order_id": 7}, "done")
    assert enqueued(crontick_conn, "charge_order")[0]["status"] == "done"
    assert summary["jobs"]["succeeded"] == 2


def test_each_test_has_a_database_of_its_own(crontick_conn: psycopg.Connection[Any]) -> None:
    assert enqueued(crontick_conn) == []
