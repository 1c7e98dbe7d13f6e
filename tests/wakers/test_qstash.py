"""CRONTICK_WAKER=qstash end to end: a booking made by book_next reaches a real crontick app over uvicorn at its
Not-Before, signed as QStash signs, and the app's existing QStash verifier accepts it and runs a tick. The stand-in
(tests/support/qstash_server.py) implements Upstash's documented publish API; no offline QStash server exists."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from crontick.app import create_app
from crontick.settings import Settings
from crontick.wakers.booking import book_next
from tests.support.credentials import QSTASH_CURRENT, QSTASH_NEXT
from tests.support.qstash_server import qstash_stand_in
from tests.support.servers import free_port, serve

TOKEN = "qstash-token-for-the-stand-in"


def test_a_booked_wakeup_arrives_at_its_instant_and_runs_a_tick(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = Settings(database_url=database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                            qstash_current_signing_key=QSTASH_CURRENT, qstash_next_signing_key=QSTASH_NEXT,
                            public_url=public_url)  # fmt: skip
        with serve(create_app(settings), port=port):
            now = datetime.now(UTC)
            due = now + timedelta(seconds=1.5)

            async def booking() -> Any:
                async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
                    return await book_next(aconn, settings, due, now)

            outcome = asyncio.run(booking())
            assert outcome.status == "booked"
            (delivery,) = stand_in.wait_delivered(1, timeout=20)
            assert delivery.statuses == [200]
            assert delivery.delivered_at is not None
            assert outcome.instant.timestamp() <= delivery.delivered_at < outcome.instant.timestamp() + 5
            (source, summary) = conn.execute(
                "select source, summary from crontick.crontick_ticks order by id desc limit 1"
            ).fetchone()
            assert "jobs" in summary, summary
            # A repeat of the same booking within QStash's window is a duplicate: no second delivery.
            again = asyncio.run(booking())
            assert again.status == "already"
            time.sleep(0.5)
            assert len(stand_in.deliveries) == 1
            assert json.loads(stand_in.published[0]["body"]) == {
                "crontick": "tick",
                "instant": outcome.instant.isoformat(),
            }
            assert source


def test_a_duplicate_within_the_window_counts_as_booked(database_url: str, conn: psycopg.Connection[Any]) -> None:
    """QStash answers 202 with the existing message id: the booking is a success, not a failure."""
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = Settings(database_url=database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                            public_url="http://127.0.0.1:9")  # fmt: skip
        now = datetime.now(UTC)

        async def booking() -> Any:
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
                return await book_next(aconn, settings, now + timedelta(hours=1), now)

        first = asyncio.run(booking())
        conn.execute("delete from crontick.crontick_wakeups")  # crontick's own record lost, QStash's kept
        second = asyncio.run(booking())
        assert (first.status, second.status) == ("booked", "booked")
        assert second.message_id == first.message_id and len(stand_in.deliveries) == 1


def test_a_wrong_token_is_a_permanent_failure(database_url: str) -> None:
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = Settings(database_url=database_url, waker="qstash", qstash_token="not-the-token",
                            qstash_url=stand_in.url, public_url="http://127.0.0.1:9")  # fmt: skip
        now = datetime.now(UTC)

        async def booking() -> Any:
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
                return await book_next(aconn, settings, now + timedelta(hours=1), now)

        outcome = asyncio.run(booking())
        assert outcome.status == "failed" and not outcome.retryable and "answered 401" in (outcome.error or "")
        assert "not-the-token" not in (outcome.error or "")
