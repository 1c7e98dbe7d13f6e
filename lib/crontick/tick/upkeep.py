"""After a tick's outcomes are recorded: report a silence, send due alerts, delete expired rows, within the budget."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import psycopg

from crontick import logs
from crontick.settings import Settings
from crontick.tick import health, retention

# Per process: when its last recorded tick finished. While that is less than the silence threshold
# ago, no tick can follow a silence, so the record statement skips that check (a null it folds away).
_last_finished_at: datetime | None = None


def checks(settings: Settings, now: datetime) -> dict[str, Any]:
    """The tick probe's parameters for a silence, alerts to send, and rows past their keep period."""
    silent_after = health.stale_after_seconds(settings)
    last = _last_finished_at
    recent = last is not None and last <= now < last + timedelta(seconds=silent_after)
    return {
        "silent_after": None if recent else silent_after,
        "alerts_on": settings.alert_webhook_url is not None,
        **retention.probe(settings, now),
    }


async def after_tick(
    conn: psycopg.AsyncConnection[Any],
    settings: Settings,
    *,
    silent_seconds: float | None,
    alerts_due: bool,
    retention_due: bool,
    now: datetime,
    deadline: float,
    clock: Callable[[], float],
) -> None:
    """Costs no statement when the tick's probe and record found nothing to do: no alert due, nothing expired
    (and no backlog left by this process's last retention run in a table the probe does not see).

    Alerts go before retention: they are news, and deleting old rows can wait a tick. Neither
    fails the tick: an unreachable alert endpoint is retried later, a slow delete is cut short.
    """
    global _last_finished_at
    _last_finished_at = now
    if silent_seconds is not None:
        logs.warning(
            "scheduler_silent", silent_seconds=silent_seconds, silent_after_seconds=health.stale_after_seconds(settings)
        )
    if alerts_due and settings.alert_webhook_url:
        from crontick.tick import alerts  # with its retry policy: loaded only when an alert is due

        try:
            sent = await alerts.deliver(conn, settings, now=now, deadline=deadline, clock=clock)
        except psycopg.Error as exc:  # the outcomes are recorded; a later tick sends the alerts
            logs.error("alerts_error", detail=f"{type(exc).__name__}: {exc}")
        else:
            if sent.sent or sent.retried or sent.failed:
                logs.info("alerts", sent=sent.sent, retried=sent.retried, failed=sent.failed)
    if retention_due or retention.owed():
        await retention.run(conn, settings, now=now, deadline=deadline, clock=clock)
