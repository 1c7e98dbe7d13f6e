"""Helpers for the reminder and alert tests: a recording provider, settings pointing at it, bookings, ticks."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs

import psycopg
from psycopg.rows import dict_row
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from crontick import db
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.constants import TEST_SECRET

WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
TWILIO_SID = "AC" + "0123456789abcdef" * 2
EMAIL_KEY = "re_test_0123456789"
TWILIO_TOKEN = "twilio-auth-token-0123456789"
NOW = datetime.fromisoformat("2026-11-30T12:00:00+00:00")  # a Monday


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode(), strict_parsing=True).items()}

    @property
    def key(self) -> str:
        """The idempotency key a reminder carries, whatever the channel; for Twilio, the recipient."""
        for name in ("idempotency-key", "webhook-id"):
            if name in self.headers:
                return self.headers[name]
        return "to:" + self.form["To"]


Behaviour = Callable[[Received, int], Response]


def ok(received: Received, n: int) -> Response:
    """Answer as the provider documents a success: Resend 200 {"id"}, Twilio 201 {"sid"}, webhooks 204."""
    if received.path.endswith("/emails"):
        return Response(json.dumps({"id": str(uuid.uuid4())}), 200, content_type="application/json")
    if received.path.endswith("/Messages.json"):
        return Response(
            json.dumps({"sid": "SM" + uuid.uuid4().hex, "status": "queued"}), 201, content_type="application/json"
        )
    return Response(status=204)


def fail_first(times: int, status: int = 500) -> Behaviour:
    def behave(received: Received, n: int) -> Response:
        if n <= times:
            return Response(json.dumps({"message": "Internal server error"}), status, content_type="application/json")
        return ok(received, n)

    return behave


def slow(seconds: float) -> Behaviour:
    """Accept the message, then answer too late: the client cannot know it was delivered."""

    def behave(received: Received, n: int) -> Response:
        time.sleep(seconds)
        return ok(received, n)

    return behave


class Provider:
    """A real HTTP server on 127.0.0.1 playing every provider; it records each request as it arrives."""

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.requests: list[Received] = []
        self.behave: Behaviour = ok
        self._lock = threading.Lock()
        server.expect_request(re.compile(".*")).respond_with_handler(self._handle)

    def reset(self) -> None:
        with self._lock:
            self.requests = []
            self.behave = ok

    @property
    def url(self) -> str:
        return self.server.url_for("").rstrip("/")

    def _handle(self, request: Request) -> Response:
        received = Received(
            request.method, request.path, {k.lower(): v for k, v in request.headers.items()}, request.get_data()
        )
        with self._lock:
            self.requests.append(received)
            n = len(self.requests)
        return self.behave(received, n)

    def keys(self) -> list[str]:
        with self._lock:
            return [r.key for r in self.requests]


@contextmanager
def recording_server() -> Iterator[Provider]:
    """A threaded server for a whole session (stopping one takes half a second); reset it for each test."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one INFO line per request slows the server
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield Provider(server)
    finally:
        server.clear()
        server.stop()


def settings_values(url: str, provider_url: str, channel: str = "email", **changes: Any) -> dict[str, Any]:
    """Settings as plain JSON values, so a subprocess can build the very same Settings."""
    values: dict[str, Any] = {
        "database_url": url,
        "cron_secret": TEST_SECRET,
        "reminder_channel": channel,
        "email_api_url": provider_url,
        "email_api_key": EMAIL_KEY,
        "email_from": "Clinic <reminders@clinic.example>",
        "twilio_api_url": provider_url,
        "twilio_account_sid": TWILIO_SID,
        "twilio_auth_token": TWILIO_TOKEN,
        "sms_from": "+15005550006",
        "whatsapp_from": "+14155238886",
        "reminder_webhook_url": provider_url + "/hooks/reminders?token=abc",
        "reminder_webhook_secret": WEBHOOK_SECRET,
        "delivery_timeout_seconds": 5.0,
    }
    values.update(changes)
    return values


def make_settings(values: dict[str, Any]) -> Settings:
    fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return Settings(**fixed)


def settings_for(url: str, provider: Provider, channel: str = "email", **changes: Any) -> Settings:
    return make_settings(settings_values(url, provider.url, channel, **changes))


def add_bookings(conn: psycopg.Connection[Any], rows: Iterable[Sequence[Any]]) -> list[str]:
    """Insert (customer_name, email, phone, starts_at, time_zone, status) rows; returns their ids in order, as
    text: the way reminder_sends.booking_id holds them (a source's id may be of any type)."""
    ids = []
    for name, email, phone, starts_at, zone, status in rows:
        row = conn.execute(
            "insert into bookings (customer_name, email, phone, starts_at, time_zone, status)"
            " values (%s, %s, %s, %s, %s, %s) returning id",
            (name, email, phone, starts_at, zone, status),
        ).fetchone()
        assert row is not None
        ids.append(str(row[0]))
    return ids


def add_due(conn: psycopg.Connection[Any], count: int, *, now: datetime = NOW, phone: bool = False) -> list[str]:
    """`count` confirmed bookings starting 1 to 23 hours after `now`, in one statement."""
    rows = conn.execute(
        "insert into bookings (customer_name, email, phone, starts_at, time_zone)"
        " select 'Customer ' || g, case when %(phone)s then null else 'c' || g || '@example.com' end,"
        "        '+3161' || lpad(g::text, 7, '0'), %(now)s + (1 + g %% 22) * interval '1 hour' + g * interval '1 second',"
        "        'Europe/Amsterdam'"
        " from generate_series(1, %(count)s) g returning id",
        {"count": count, "now": now, "phone": phone},
    ).fetchall()
    return [str(r[0]) for r in rows]


def tick(url: str, settings: Settings, now: datetime) -> TickResult:
    """Run one real tick on its own connection, as the endpoint would."""

    async def go() -> TickResult:
        conn = await db.connect(url)
        try:
            return await run_tick(conn, settings, now=now, source="test")
        finally:
            await conn.close()

    return asyncio.run(go())


def sends(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    return conn.cursor(row_factory=dict_row).execute("select * from reminder_sends order by id").fetchall()


def unsent(conn: psycopg.Connection[Any], booking_ids: Iterable[str], kind: str = "24h") -> list[dict[str, Any]]:
    """The `kind` reminders of `booking_ids` not sent, each with its row's status (None: never claimed), attempt,
    next attempt and error: what a race that ends short left behind, and why."""
    return (
        conn.cursor(row_factory=dict_row)
        .execute(
            "select b.id as booking_id, s.status, s.attempts, s.next_attempt_at, s.locked_until,"
            "       pg_catalog.left(s.last_error, 200) as last_error"
            " from pg_catalog.unnest(%(ids)s::text[]) as b(id)"
            " left join reminder_sends s on s.booking_id = b.id and s.kind = %(kind)s"
            " where s.status is distinct from 'sent' order by b.id",
            {"ids": list(booking_ids), "kind": kind},
        )
        .fetchall()
    )


def send_of(conn: psycopg.Connection[Any], booking_id: int | str, kind: str = "24h") -> dict[str, Any]:
    row = (
        conn.cursor(row_factory=dict_row)
        .execute("select * from reminder_sends where booking_id = %s and kind = %s", (str(booking_id), kind))
        .fetchone()
    )
    assert row is not None, f"no reminder_sends row for booking {booking_id} ({kind})"
    return row


def later(minutes: float, base: datetime = NOW) -> datetime:
    return base + timedelta(minutes=minutes)
