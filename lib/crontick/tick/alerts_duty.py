"""The alerts duty: send the alerts due (raised by this tick's record statement, or pending) to the webhook."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from crontick import logs
from crontick.tick.duty import Duty, Tick

if TYPE_CHECKING:
    from crontick.tick.alerts import AlertCounts


class AlertsDuty(Duty):
    name = "alerts"
    after_record = True  # before retention: alerts are news, and deleting old rows can wait a tick

    def asks(self, tick: Tick, now: datetime) -> Mapping[str, Any]:
        return {"on": tick.settings.alert_webhook_url is not None}

    async def run(self, tick: Tick) -> AlertCounts | None:
        """None: nothing was due, or sending failed (the outcomes are recorded; a later tick sends them)."""
        due = (
            tick.part(self.name).get("due")
            or (tick.recorded is not None and tick.recorded.alerts_due)
            or tick.alerts_raised  # by a duty before this one (a failed wake-up's booking)
        )
        if not (due and tick.settings.alert_webhook_url):
            return None
        from crontick.tick import alerts  # with its retry policy: loaded only when an alert is due

        try:
            sent = await alerts.deliver(
                tick.conn, tick.settings, now=tick.time, deadline=tick.deadline, clock=tick.clock
            )
        except psycopg.Error as exc:  # never fails the tick: an unreachable endpoint is retried later
            logs.error("alerts_error", detail=f"{type(exc).__name__}: {exc}")
            return None
        if sent.sent or sent.retried or sent.failed:
            logs.info("alerts", sent=sent.sent, retried=sent.retried, failed=sent.failed)
        return sent


DUTY = AlertsDuty()
