"""crontick_tick_probe keeps its 16-argument signature (before migration 0034) as a wrapper that answers as the new one does."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row

import crontick
from crontick import db
from crontick.db.schema import source_label
from crontick.settings import Settings
from crontick.tick import duties, probe
from crontick.tick.duty import Tick, when
from crontick.tick.pacing import Pacing
from tests.support.constants import TEST_SECRET

OLD = (
    "select * from crontick_tick_probe(%(now)s::timestamptz, %(limit)s::int, %(lease)s::interval, %(source)s::text,"
    " %(summary)s::jsonb, %(unsynced)s::boolean, %(kinds)s::text[], %(leads)s::interval[], %(floors)s::interval[],"
    " %(silent_after)s::float8, %(alerts_on)s::boolean, %(done_before)s::timestamptz, %(failed_before)s::timestamptz,"
    " %(kept_before)s::timestamptz, %(reminder_source)s::text, %(flow)s::jsonb)"
)


def both(url: str, now: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The old signature's row and the new one's, each in a transaction rolled back (the probe claims and logs)."""
    s = Settings(database_url=url, cron_secret=TEST_SECRET, reminder_kinds=("24h", "1h"), alert_webhook_url="http://x/")
    tick = Tick(None, s, Pacing(), lambda: 0.0, 1.0, now)  # type: ignore[arg-type]
    asks = duties.asks(tick, now)
    new_params = probe.parameters(s, now, "test", {}, asks)
    retention = asks["retention"]
    old_params = {
        **new_params,
        "unsynced": False,
        "kinds": ["24h", "1h"],
        "leads": [timedelta(hours=24), timedelta(hours=1)],
        "floors": [timedelta(hours=1), timedelta(0)],
        "silent_after": asks["silence"]["after"],
        "alerts_on": True,
        **retention,
        "reminder_source": source_label(s.reminder_source_parts),
    }
    with psycopg.connect(url) as conn:
        conn.row_factory = dict_row  # type: ignore[assignment]
        old = conn.execute(OLD, old_params).fetchone()
        conn.rollback()
        new = conn.execute(db.query("tick_probe"), new_params).fetchone()
        conn.rollback()
    assert old is not None and new is not None
    return old, new


def test_the_old_signature_answers_what_the_new_one_does(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        crontick.enqueue(
            conn, "t_tick_probe.later", {}, run_after=conn.execute("select now() + interval '1 hour'").fetchone()[0]
        )  # type: ignore[index]
        conn.execute("insert into bookings (customer_name, starts_at) values ('Ada', now() + interval '30 minutes')")
        conn.execute("insert into bookings (customer_name, starts_at) values ('Bo', now() + interval '30 hours')")
        conn.execute(
            "insert into crontick_ticks (started_at, finished_at, source, summary)"
            " values (now() - interval '1 day', now() - interval '1 day', 'test', '{}')"
        )
        now = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    old, new = both(database_url, now)
    d = new["duties"]
    assert (old["idle"], old["now"], old["next_job_at"], old["throttled_until"]) == (
        new["idle"], new["now"], new["next_job_at"], new["throttled_until"]
    )  # fmt: skip
    assert old["idle"] is False and old["reminders_due"] is True and d["reminders"]["due"] is True
    assert (old["leases_expired"], old["schedules_due"], old["alerts_due"], old["retention_due"]) == (
        d["rescue"]["due"], d["schedules"]["due"], d["alerts"]["due"], d["retention"]["due"]
    )  # fmt: skip
    assert old["alerts_due"] is True  # the silence it ended raised an alert, to be sent
    assert old["silent_seconds"] == d["silence"]["silent_seconds"] and old["silent_seconds"] >= 86400 - 5
    assert old["previous_tick_at"] == when(d["silence"], "previous_tick_at")
    assert old["next_reminder_at"] is not None and old["next_reminder_at"] == when(d["reminders"], "next_at")
