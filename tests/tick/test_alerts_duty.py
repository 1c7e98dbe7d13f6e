"""crontick.tick.alerts_duty: sends the alerts due when a webhook URL is set, and never fails the tick."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.tick import alerts_duty
from crontick.tick.alerts import AlertCounts
from crontick.tick.duty import Tick
from crontick.tick.pacing import Pacing
from tests.support.servers import free_port
from tests.tick.support import DutyRun, settings_for

DUTY = alerts_duty.DUTY


def raise_alert(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "insert into crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)"
        " values ('job_failed', gen_random_uuid()::text, now(),"
        ' \'{"job_id": 1, "job_type": "t.x", "attempts": 4, "error": "boom"}\', now(), now(), now())'
    )


def test_it_asks_whether_a_url_is_set(database_url: str) -> None:
    off = Tick(None, settings_for(database_url), Pacing(), lambda: 0.0, 1.0, None)  # type: ignore[arg-type]
    on = Tick(
        None, settings_for(database_url, alert_webhook_url="http://127.0.0.1:9/a"), Pacing(), lambda: 0.0, 1.0, None
    )  # type: ignore[arg-type]
    assert DUTY.asks(off, None) == {"on": False} and DUTY.asks(on, None) == {"on": True}  # type: ignore[arg-type]


def test_due_it_tries_each_alert_and_counts_a_refused_send_as_a_retry(database_url: str, duty_run: DutyRun) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        raise_alert(conn)
        raise_alert(conn)
    s = settings_for(database_url, alert_webhook_url=f"http://127.0.0.1:{free_port()}/alerts")  # a closed port
    counts, _, statements = duty_run(DUTY, {"alerts": {"due": True}}, settings=s)
    assert counts == AlertCounts(retried=2)
    assert statements == ["alert_claim_due", "alert_record_outcomes"]


def test_not_due_or_without_a_url_it_costs_no_statement(database_url: str, duty_run: DutyRun) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        raise_alert(conn)
    s = settings_for(database_url, alert_webhook_url=f"http://127.0.0.1:{free_port()}/alerts")
    assert duty_run(DUTY, {"alerts": {"due": False}}, settings=s)[::2] == (None, [])
    assert duty_run(DUTY, {"alerts": {"due": True}})[::2] == (None, [])  # no URL: raised, kept, not sent
