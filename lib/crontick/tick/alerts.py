"""Alerts: send the outbox rows (a job's last failure, a failed or unknown reminder, a silence) to a chat webhook."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import psycopg

from crontick import logs, retry
from crontick.db import query
from crontick.errors import PermanentError
from crontick.settings import Settings
from crontick.text import describe, scrub

EVENTS = ("job_failed", "reminder_failed", "reminder_unknown", "scheduler_silent", "wakeup_failed")
STATUSES = ("pending", "sent", "failed")
BATCH_SIZE = 20  # alerts sent per tick at most: a burst of failures drains over a few ticks
MAX_ATTEMPTS = 6
# After a failed send: 1 min, 5 min, 30 min, 2 h, 6 h (±20 %), then the alert is closed as failed.
RETRY_POLICY = retry.Retry((60.0, 300.0, 1800.0, 7200.0, 21600.0))
# An alert not sent within this long of being raised is closed unsent (e.g. raised while no
# URL was configured): a day-old "job failed" posted into a chat is noise, not news.
MAX_AGE = timedelta(hours=24)
MIN_SEND_SECONDS = 0.2  # left of the tick's budget, or sending waits for the next tick
ERROR_CHARS = 300  # of an error quoted in the one-line text (the full one is in the body's "error")
# Text from outside (an error quoting a receiver's answer, a booking id) must not become a link
# or a mention in the chat: Slack, Mattermost and Discord link URLs and bare domains and notify
# on @channel, @here, @everyone, @all and @user. See defused().
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"']*")
_DOMAIN_DOT = re.compile(r"(?<=[A-Za-z0-9])\.(?=[A-Za-z])")  # example.com, crontick.jobs, handler.py
_MENTION = re.compile(r"@(?=\w)")


@dataclass(frozen=True)
class AlertCounts:
    sent: int = 0
    retried: int = 0
    failed: int = 0  # closed for good: the last attempt, or a refusal (4xx)


class Claimed(NamedTuple):
    id: int
    event: str
    body: dict[str, Any]
    attempts: int
    occurred_at: datetime


class Outcome(NamedTuple):
    id: int
    attempt: int
    sent: bool
    retry_at: datetime | None = None
    error: str | None = None


def payload(alert: Claimed) -> dict[str, Any]:
    """The POST body: Slack-compatible ({"text": one line}) plus the event and its ids as fields."""
    return {
        "text": text(alert.event, alert.body),
        "event": alert.event,
        **alert.body,
        "alert_id": alert.id,
        "occurred_at": alert.occurred_at.isoformat(),
    }


def text(event: str, body: Mapping[str, Any]) -> str:
    """One readable line for a person in a chat channel: &, < and > escaped as Slack requires, and
    links and mentions in the text that came from outside defused (see defused())."""
    error = _one_line(defused(str(body.get("error") or "")))
    booking = defused(str(body.get("booking_id")))
    if event == "job_failed":
        line = (
            f"crontick: job {body['job_id']} ({body['job_type']}) failed for good after "
            f"{_attempts(body.get('attempts'))}: {error}"
        )
    elif event == "reminder_failed":
        line = (
            f"crontick: the {body['kind']} reminder for booking {booking} failed for good "
            f"over {body.get('channel')}: {error}"
        )
    elif event == "reminder_unknown":
        line = (
            f"crontick: the {body['kind']} reminder for booking {booking} may not have reached "
            f"the customer over {body.get('channel')}; check with the provider: {error}"
        )
    elif event == "scheduler_silent":
        line = (
            f"crontick: no tick ran for {duration(float(body['silent_seconds']))} (alerting after "
            f"{duration(float(body['silent_after_seconds']))}); ticks have resumed, check the scheduler"
        )
    elif event == "wakeup_failed":
        line = (
            f"crontick: {body.get('failures')} wake-up bookings failed within an hour (CRONTICK_WAKER); due work "
            f"waits for the safety-net schedule until one succeeds: {error}"
        )
    else:
        line = f"crontick: {event}"
    return line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def defused(text: str) -> str:
    """`text` as a chat shows it without a link or a mention in it, still readable (a pure function).

    A URL keeps its characters but not its shape: `https://evil.example/login` becomes
    `https[:]//evil[.]example/login`; a dot between a letter or digit and a letter becomes `[.]`
    (`evil[.]example`, which no chat auto-links); `@` before a word becomes `[@]` (`[@]channel`),
    and `](`, a Markdown link's middle, becomes `] (`. Slack's `<!here>` and `<url|text>` need only
    the escaping text() applies to the whole line (`&lt;!here&gt;` is plain text to Slack).
    """
    text = _URL.sub(lambda m: m.group(0).replace("://", "[:]//", 1).replace(".", "[.]"), text)
    text = _DOMAIN_DOT.sub("[.]", text)
    return _MENTION.sub("[@]", text).replace("](", "] (")


def duration(seconds: float) -> str:
    """3725 -> '1 h 2 min'; 90000 -> '1 d 1 h'; 45 -> '45 s'."""
    s = round(seconds)
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "min")] if s >= 60 else [(secs, "s")]
    shown = [f"{n} {unit}" for n, unit in parts if n][:2]
    return " ".join(shown) or "0 s"


def decide(alert: Claimed, error: str, permanent: bool, finished: datetime, rand: float) -> Outcome:
    """A failed send: retried with backoff, or closed (a refusal, or the last attempt) - pure."""
    decision = retry.after_failure(alert.attempts, MAX_ATTEMPTS, RETRY_POLICY, finished, rand, permanent)
    retry_at = decision.run_after if isinstance(decision, retry.RetryAt) else None
    return Outcome(alert.id, alert.attempts, False, retry_at, error)


async def deliver(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    now: datetime,
    deadline: float,
    clock: Callable[[], float],
    rand: Callable[[], float] = random.random,  # backoff jitter, not a secret
) -> AlertCounts:
    """Send up to a batch of due alerts in two statements (claim, record), never holding a transaction
    across a send, never raising: a failing endpoint is retried by later ticks."""
    url = settings.alert_webhook_url
    if url is None or deadline - clock() < MIN_SEND_SECONDS:
        return AlertCounts()
    params = {
        "now": now,
        "limit": BATCH_SIZE,
        "lease_until": now + timedelta(seconds=settings.lease_seconds),
        "stale_before": now - MAX_AGE,
    }
    cur = await conn.execute(query("alert_claim_due"), params)
    claimed = [Claimed(*row) for row in await cur.fetchall()]
    if not claimed:
        return AlertCounts()
    began = clock()
    gate = asyncio.Semaphore(settings.concurrency)

    async def one(alert: Claimed) -> Outcome:
        async with gate:
            remaining = deadline - clock()
            if remaining <= 0:  # out of budget before it started: hand the attempt back for the next tick
                return Outcome(alert.id, alert.attempts, False, now, "not sent: the tick's time budget ran out")
            error, permanent = await send(alert, url, settings, remaining)
        if error is None:
            return Outcome(alert.id, alert.attempts, True)
        finished = now + timedelta(seconds=clock() - began)
        return decide(alert, scrub(error, _secrets(settings)), permanent, finished, rand())

    outcomes = list(await asyncio.gather(*(one(a) for a in claimed)))
    return await record(conn, claimed, outcomes, now + timedelta(seconds=clock() - began))


async def send(alert: Claimed, url: str, settings: Settings, remaining: float) -> tuple[str | None, bool]:
    """POST one alert; (None, _) when the endpoint took it, else (why, whether retrying is pointless)."""
    from crontick.channels import webhook, wire  # imports httpx: only ticks with an alert to send pay for it

    body = json.dumps(payload(alert), separators=(",", ":"), ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json"}
    if settings.alert_webhook_secret:
        # webhook-id stays the same on every retry, so a receiver can drop a repeat.
        headers |= webhook.sign(settings.alert_webhook_secret, f"alert_{alert.id}", int(time.time()), body)
    what = f"alert webhook {urlsplit(url).netloc}"  # never the path: a Slack or Discord URL's path is its secret
    try:
        await asyncio.wait_for(
            wire.post(url, min(settings.delivery_timeout_seconds, remaining), what, content=body, headers=headers),
            remaining,
        )
    except PermanentError as exc:
        return str(exc), True
    except TimeoutError:
        return f"{what}: no answer within the tick's time budget", False
    except Exception as exc:  # DeliveryFailed, DeliveryUnknown, anything else: retried later  # noqa: BLE001
        return describe(exc), False
    return None, False


async def record(
    conn: psycopg.AsyncConnection[Any], claimed: Sequence[Claimed], outcomes: Sequence[Outcome], now: datetime
) -> AlertCounts:
    cur = await conn.execute(
        query("alert_record_outcomes"),
        {
            "now": now,
            "ids": [o.id for o in outcomes],
            "attempts": [o.attempt for o in outcomes],
            "sent": [o.sent for o in outcomes],
            "retry_ats": [o.retry_at for o in outcomes],
            "errors": [o.error for o in outcomes],
        },
    )
    written = dict(await cur.fetchall())
    events = {a.id: a.event for a in claimed}
    for o in outcomes:
        status = written.get(o.id)
        if status == "failed":
            logs.error("alert_failed", alert_id=o.id, alert_event=events[o.id], attempts=o.attempt, error=o.error)
        elif status == "pending":
            logs.warning(
                "alert_retry",
                alert_id=o.id,
                alert_event=events[o.id],
                attempts=o.attempt,
                retry_at=o.retry_at,
                error=o.error,
            )
    statuses = list(written.values())
    return AlertCounts(sent=statuses.count("sent"), retried=statuses.count("pending"), failed=statuses.count("failed"))


def _secrets(settings: Settings) -> tuple[str, ...]:
    url = settings.alert_webhook_url or ""
    path = urlsplit(url).path
    return (*settings.secrets, *((path,) if len(path) > 1 else ()))


def _one_line(error: str) -> str:
    flat = " ".join(error.split())
    return flat if len(flat) <= ERROR_CHARS else flat[: ERROR_CHARS - 1] + "…"


def _attempts(n: Any) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"
