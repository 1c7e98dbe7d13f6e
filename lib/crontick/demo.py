"""Demo data for `crontick dev` / `make run`: handlers, jobs and bookings so the first tick does visible work."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import psycopg

from .db import query
from .handlers import Job, handler
from .inbound import inbound
from .queue import enqueue
from .schedules import schedule

log = logging.getLogger("crontick")

# (name, email, phone, starts in, time zone, status): four due within 24 hours in four zones
# (one reachable by phone only), one not due yet, and one cancelled, which gets no reminder.
DEMO_BOOKINGS: tuple[tuple[str, str | None, str | None, timedelta, str, str], ...] = (
    ("Ada Lovelace", "ada@example.com", None, timedelta(hours=20, minutes=30), "Europe/Amsterdam", "confirmed"),
    ("Kenji Sato", "kenji@example.com", None, timedelta(hours=5), "Asia/Tokyo", "confirmed"),
    ("María García", None, "+12025550143", timedelta(hours=22), "America/New_York", "confirmed"),
    ("Aroha Ngata", "aroha@example.com", None, timedelta(hours=9, minutes=30), "Pacific/Auckland", "confirmed"),
    ("Priya Raman", "priya@example.com", None, timedelta(days=3), "Asia/Kolkata", "confirmed"),
    ("Tom Baker", "tom@example.com", None, timedelta(hours=8), "Europe/London", "cancelled"),
)


@handler("demo.greet")
def greet(payload: Any, job: Job) -> None:
    print(f"[demo.greet] job {job.id}: hello, {payload.get('name', 'world')}!", flush=True)


@handler("demo.flaky")
def flaky(payload: Any, job: Job) -> None:
    if job.attempt < 2:
        raise RuntimeError(f"demo.flaky: failing attempt {job.attempt} on purpose; it retries in about a minute")
    print(f"[demo.flaky] job {job.id}: succeeded on attempt {job.attempt}", flush=True)


@handler("demo.heartbeat")
def heartbeat(payload: Any, job: Job) -> None:
    slot = job.scheduled_for.strftime("%Y-%m-%d %H:%M UTC") if job.scheduled_for else "no slot"
    print(
        f"[demo.heartbeat] job {job.id}: schedule {job.schedule!r}, slot {slot}: {payload.get('message')}", flush=True
    )


def declare_schedules() -> None:
    """The demo's recurring job. `crontick dev` calls this; importing the module declares nothing,
    so a process that imports it for its handlers (a test, say) does not tick a schedule it never asked for."""
    schedule(
        "demo.quarter-hourly",
        "*/15 * * * *",
        "demo.heartbeat",
        {"message": "hello from a schedule"},
        time_zone="Europe/Amsterdam",
    )


DEMO_WHATSAPP_FROM = "whatsapp:+14155238886"  # Twilio's WhatsApp sandbox number


def declare_hooks(twilio_token: str) -> None:
    """POST /api/hooks/whatsapp: a Twilio WhatsApp webhook whose messages become `autoreply` jobs."""
    inbound("whatsapp", "autoreply", verify="twilio", secret=twilio_token)


@handler("autoreply")
async def autoreply(payload: Any, job: Job) -> None:
    """The slow part of a WhatsApp bot (an LLM call, in a real one), done by a tick after the webhook answered."""
    from . import delivery

    event = payload.get("event") or {}
    text = (
        f"You said: {event.get('Body', '')!s}. This reply was written by job {job.id}, after the webhook had answered."
    )
    # Printed as the console channel prints reminders; a real bot sends it with the `send_whatsapp` job type.
    message = delivery.Message(
        to=str(event.get("From", "?")).removeprefix("whatsapp:"),
        subject=f"WhatsApp auto-reply to {payload.get('event_id')}",
        text=text,
        sender=str(event.get("To") or DEMO_WHATSAPP_FROM).removeprefix("whatsapp:"),
        idempotency_key=f"job:{job.id}",
    )
    await delivery.ConsoleChannel(DEMO_WHATSAPP_FROM).send(message, 10.0)


def seed(url: str) -> None:
    """Add demo jobs and bookings once (keys and the upcoming-booking check make a re-run add nothing)."""
    with psycopg.connect(url, prepare_threshold=None) as conn, conn.transaction():
        for name in ("Ada", "Grace", "Linus"):
            enqueue(conn, "demo.greet", {"name": name}, key=f"demo:greet:{name}")
        enqueue(conn, "demo.flaky", {}, key="demo:flaky")
        columns = list(zip(*DEMO_BOOKINGS, strict=True))
        params = dict(
            zip(("names", "emails", "phones", "starts_in", "zones", "statuses"), map(list, columns), strict=True)
        )
        conn.execute(query("booking_insert_demo"), params)
