"""Demo data for `crontick dev` / `make run`: handlers, jobs and bookings so the first tick does visible work."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import psycopg

from crontick.db import query
from crontick.flow.limits import rate_limit
from crontick.hooks.inbound import inbound
from crontick.jobs.debounce import Debounce
from crontick.jobs.job import Job
from crontick.jobs.queue import enqueue
from crontick.jobs.registry import handler
from crontick.retry import Retry
from crontick.schedules.registry import schedule

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


# A person who types three short messages in a row gets one reply to all three: each sender's
# messages merge into one job until they pause for 2 s (at most 15 s after the first), and one
# conversation's replies run one at a time, in order (its group).
DEMO_REPLY_DEBOUNCE = Debounce("{From}", 2, max_seconds=15)
FAKE_LLM_SECONDS = 0.3
# The demo's documented fault (docs/getting-started.md): the fake Twilio refuses the first send of the
# process, so the tour shows a failed send retried without the LLM step being called again. A failed
# reply is due again after this long (the next tick runs it), not after the default minute.
DEMO_REPLY_RETRY = Retry((5.0,), jitter_fraction=0)


class FakeTwilio:
    """Fails the first send it is given (`fail_next`), then sends: the fault the tour shows."""

    def __init__(self) -> None:
        self.fail_next = True

    def check(self, job_id: int) -> None:
        if self.fail_next:
            self.fail_next = False
            print(
                f"[demo.autoreply] job {job_id}: the fake Twilio answered 503 to the first send (a documented fault); "
                f"the job retries in {DEMO_REPLY_RETRY.delays_seconds[0]:g} s, on the next tick, without calling the "
                "LLM again",
                flush=True,
            )
            raise RuntimeError("demo: the fake Twilio answered 503 to the first send, on purpose")


FAKE_TWILIO = FakeTwilio()


def declare_hooks(twilio_token: str) -> None:
    """POST /api/hooks/whatsapp: a Twilio WhatsApp webhook whose messages become `autoreply` jobs,
    debounced per sender and grouped per conversation."""
    inbound(
        "whatsapp",
        "autoreply",
        verify="twilio",
        secret=twilio_token,
        debounce=DEMO_REPLY_DEBOUNCE,
        group_key="conv:{From}",
    )


# The fake LLM's provider limit, shared by every conversation and every process (docs/flow-control.md):
# at most 20 replies start in any minute; more wait as pending, spending no attempt.
DEMO_LLM_LIMIT = rate_limit("demo-llm", 20, per_seconds=60)


async def fake_llm(messages: list[str]) -> str:
    """Plays the LLM call of a real bot: slow, and rate-limited across every conversation (DEMO_LLM_LIMIT)."""
    await asyncio.sleep(FAKE_LLM_SECONDS)
    return "You said: " + " / ".join(messages) + "."


# Replies go before the demo's other jobs, and count against the fake LLM's limit.
@handler("autoreply", priority=-10, retry=DEMO_REPLY_RETRY, rate_limit=DEMO_LLM_LIMIT.name)
async def autoreply(payload: Any, job: Job) -> None:
    """The slow part of a WhatsApp bot, done by a tick after the webhook answered, as a workflow of durable steps
    (docs/steps.md): context, then the reply (an LLM call, in a real bot), then the send, each recorded once, so a
    retry after a failed send does not write (or pay for) the reply again.

    `job.payloads` holds every message the sender sent in the debounce window, oldest first.
    """
    event = payload.get("event") or {}
    said = [str((p.get("event") or {}).get("Body", "")) for p in job.payloads if isinstance(p, dict)]
    context = await job.step("context", _context, event, said)
    reply = await job.step("llm", _reply, context, job.id, job.attempt)
    await job.step("send", _send, payload, event, reply, job.step_key("send"), job.id)


def _context(event: dict[str, Any], said: list[str]) -> dict[str, Any]:
    """What a real bot reads from its database (the conversation so far); here, the messages."""
    return {"from": str(event.get("From", "?")), "said": said}


async def _reply(context: dict[str, Any], job_id: int, attempt: int) -> str:
    print(
        f"[demo.autoreply] job {job_id}: calling the LLM (attempt {attempt}); a retry reuses its recorded reply",
        flush=True,
    )
    said = list(context["said"])
    text = f"{await fake_llm(said)} This reply was written by job {job_id}, after the webhook had answered"
    return text + (f" ({len(said)} messages in one reply)." if len(said) > 1 else ".")


async def _send(payload: dict[str, Any], event: dict[str, Any], reply: str, key: str, job_id: int) -> str:
    from crontick.channels import console
    from crontick.channels.message import Message

    FAKE_TWILIO.check(job_id)
    # Printed as the console channel prints reminders; a real bot sends it with the `send_whatsapp` job type.
    message = Message(
        to=str(event.get("From", "?")).removeprefix("whatsapp:"),
        subject=f"WhatsApp auto-reply to {payload.get('event_id')}",
        text=reply,
        sender=str(event.get("To") or DEMO_WHATSAPP_FROM).removeprefix("whatsapp:"),
        idempotency_key=key,  # the same on every attempt: a provider drops a second send
    )
    await console.ConsoleChannel(DEMO_WHATSAPP_FROM).send(message, 10.0)
    return key


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
