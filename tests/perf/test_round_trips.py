"""A tick sends the same SQL statements for a batch of 1, 100 or 1,000: round trips do not grow with the work.

Counted on the wire: libpq's trace of the tick's connection records every message the client
sends, and each statement is one Parse (extended protocol) or one Query (simple protocol).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick import db
from crontick.settings import Settings
from crontick.tick import alerts as crontick_alerts
from crontick.tick import probe, retention
from crontick.tick.pipeline import TickResult, run_tick
from tests.support.constants import TEST_SECRET
from tests.support.databases import fresh_database
from tests.support.servers import free_port
from tests.support.wire import traced

BATCHES = (1, 100, 1000)
ran: list[int] = []


@crontick.handler("t_perf.noop")
async def noop(payload: Any, job: crontick.Job) -> None:
    ran.append(payload["n"])


def traced_tick(url: str, settings: Settings, now: datetime | None, **options: Any) -> tuple[TickResult, list[str]]:
    return traced(url, lambda conn: run_tick(conn, settings, now=now, source="test", **options))


def db_now(conn: psycopg.Connection[Any]) -> datetime:
    row = conn.execute("select now()").fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def add_due_bookings(conn: psycopg.Connection[Any], count: int, now: datetime) -> None:
    conn.execute(
        "insert into bookings (customer_name, email, starts_at)"
        " select 'Customer ' || g, 'c' || g || '@example.com', %(now)s + interval '2 hours' + g * interval '1 second'"
        " from generate_series(1, %(n)s) g",
        {"now": now, "n": count},
    )


def expire_leases(conn: psycopg.Connection[Any], count: int) -> None:
    """What ticks killed mid-run leave behind: running jobs whose lease has passed."""
    conn.execute(
        "update jobs set status = 'running', attempts = 1, locked_until = now() - interval '1 minute'"
        " where id in (select id from jobs order by id limit %(n)s)",
        {"n": count},
    )


@crontick.handler("t_perf.fail")
async def fail(payload: Any, job: crontick.Job) -> None:
    ran.append(payload["n"])
    raise crontick.PermanentError("expected nothing, got: a failure that raises an alert")


def one_tick(
    url: str,
    conn: psycopg.Connection[Any],
    batch: int,
    *,
    reminders: bool,
    expired: bool,
    alerts: bool = False,
    old_rows: bool = False,
) -> list[str]:
    ran.clear()
    retention.reset()
    crontick.enqueue_many(conn, [("t_perf.fail" if alerts else "t_perf.noop", {"n": n}) for n in range(batch)])
    if expired:
        expire_leases(conn, batch)
    now = db_now(conn) + timedelta(seconds=1)
    if reminders:
        add_due_bookings(conn, batch, now)
    if old_rows:  # more expired done jobs than one retention batch
        conn.execute(
            "insert into jobs (type, payload, status, updated_at) select 'old', '{}', 'done', %(t)s"
            " from generate_series(1, %(n)s)",
            {"t": now - timedelta(days=30), "n": retention.BATCH_SIZE + batch},
        )
    # Alerts go to a closed port: each send fails at once, and is recorded as a retry.
    settings = Settings(
        database_url=url,
        cron_secret=TEST_SECRET,
        batch_size=batch,
        reminder_channel="console",
        alert_webhook_url=f"http://127.0.0.1:{free_port()}/alerts" if alerts else None,
    )
    result, statements = traced_tick(url, settings, now)
    # The tick really did the whole batch: otherwise an equal count would prove nothing.
    assert result.jobs.claimed == batch and sorted(ran) == list(range(batch))
    assert result.jobs.failed == (batch if alerts else 0)
    assert result.jobs.rescued == (batch if expired else 0)
    assert result.reminders.sent == (batch if reminders else 0)
    return statements


@pytest.mark.parametrize(
    ("reminders", "expired", "alerts", "old_rows"),
    [
        (False, False, False, False),
        (True, False, False, False),
        (False, True, False, False),
        (False, False, True, False),
        (False, False, False, True),
    ],
    ids=["jobs", "jobs+reminders", "jobs+expired-leases", "jobs+alerts", "jobs+retention"],
)
@pytest.mark.slow
def test_statements_per_tick_do_not_grow_with_the_batch(
    admin_url: str, template_name: str, reminders: bool, expired: bool, alerts: bool, old_rows: bool
) -> None:
    seen: dict[int, list[str]] = {}
    for batch in BATCHES:
        with fresh_database(admin_url, template_name) as url, psycopg.connect(url, autocommit=True) as conn:
            seen[batch] = one_tick(
                url, conn, batch, reminders=reminders, expired=expired, alerts=alerts, old_rows=old_rows
            )
            if alerts:  # every final failure raised its alert, and the tick tried a bounded batch of them
                tried = conn.execute(
                    "select count(*) filter (where attempts = 1), count(*) from crontick_alerts"
                ).fetchone()
                assert tried == (min(batch, crontick_alerts.BATCH_SIZE), batch)
    assert seen[1] == seen[100] == seen[1000], seen
    statements = seen[1]
    # The probe first (it claims the batch), one record of outcomes (with the tick's log row),
    # whatever the batch; a step the probe found nothing for sends nothing.
    assert statements[0] == "tick_probe" and statements.count("tick_probe") == 1
    assert statements.count("job_record_outcomes") == 1
    assert statements.count("job_claim_due") == (1 if expired else 0)  # a second claim takes the rescued
    assert statements.count("job_rescue_expired") == (1 if expired else 0)
    assert statements.count("reminder_claim_due") == (1 if reminders else 0)
    # Alerts and retention cost nothing unless the probe or the record found work for them.
    assert statements.count("alert_claim_due") == statements.count("alert_record_outcomes") == (1 if alerts else 0)
    assert statements.count("retention_delete") == (1 if old_rows else 0)
    upkeep = 2 * alerts + 4 * old_rows  # retention: BEGIN, its statement_timeout, the delete, COMMIT
    assert len(statements) == 2 + 2 * (reminders + expired) + upkeep
    if not upkeep:
        assert statements[-1] == "job_record_outcomes"
    kinds = (("reminders", reminders), ("expired", expired), ("alerts", alerts), ("retention", old_rows))
    print(
        f"statements per tick ({'+'.join(k for k, v in kinds if v) or 'jobs'}): "
        f"{len(statements)}: {', '.join(' '.join(n.split()) for n in statements)}"
    )


def ticks_logged(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    return [r[0] for r in conn.execute("select summary from crontick_ticks order by id").fetchall()]


def test_an_idle_tick_is_one_statement_that_also_logs_it(database_url: str, conn: psycopg.Connection[Any]) -> None:
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console")
    result, statements = traced_tick(database_url, settings, db_now(conn))
    assert statements == ["tick_probe"]
    assert result == TickResult(duration_ms=result.duration_ms)  # nothing done, nothing pending
    assert [t["next_due_at"] for t in ticks_logged(conn)] == [None]  # /api/health still sees the tick


def test_on_the_databases_clock_an_idle_tick_is_one_statement_and_a_drains_batch_two(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """No time passed in (production): the probe, or a drain's claim, reads the database's clock in the
    same statement, so reading it costs no round trip."""
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console")
    before = db_now(conn)
    result, statements = traced_tick(database_url, settings, None)
    assert statements == ["tick_probe"]
    logged = conn.execute("select started_at from crontick_ticks").fetchone()
    assert logged is not None and logged[0] >= before  # the database's time, not this host's
    crontick.enqueue_many(conn, [("t_perf.noop", {"n": n}) for n in range(10)])
    result, statements = traced_tick(database_url, settings, None, jobs_due=True, send_reminders=False)
    assert statements == ["job_claim_due", "job_record_outcomes"]
    assert result.jobs.succeeded == 10


def test_an_idle_tick_says_when_work_is_next_due(database_url: str, conn: psycopg.Connection[Any]) -> None:
    now = db_now(conn)
    job_at, starts_at = now + timedelta(hours=3), now + timedelta(hours=26)
    crontick.enqueue(conn, "t_perf.noop", {"n": 1}, run_after=job_at)
    conn.execute("update jobs set status = 'done'")  # a finished job is no work
    crontick.enqueue(conn, "t_perf.noop", {"n": 2}, run_after=job_at + timedelta(hours=1))
    conn.execute("insert into bookings (customer_name, starts_at) values ('Ada', %(s)s)", {"s": starts_at})
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console")

    result, statements = traced_tick(database_url, settings, now)
    assert statements == ["tick_probe"]
    # The booking's 24h reminder falls due at 02:00 from now, before the job (04:00).
    assert result.next_due_at == starts_at - timedelta(hours=24)
    assert result.to_json()["next_due_at"] == (starts_at - timedelta(hours=24)).isoformat()
    logged = datetime.fromisoformat(ticks_logged(conn)[-1]["next_due_at"])
    assert logged == starts_at - timedelta(hours=24)

    # Two hours on, the reminder is due: the tick sends it and goes on to record, then names the job.
    later = now + timedelta(hours=2, seconds=1)
    result, statements = traced_tick(database_url, settings, later)
    assert result.reminders.sent == 1 and result.jobs.claimed == 0
    assert statements == ["tick_probe", "reminder_claim_due", "reminder_record_outcomes", "job_record_outcomes"]
    assert result.next_due_at == job_at + timedelta(hours=1)
    assert datetime.fromisoformat(ticks_logged(conn)[-1]["next_due_at"]) == job_at + timedelta(hours=1)


def test_the_idle_ticks_quick_commit_stays_inside_its_own_transaction(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """The idle tick skips the WAL flush wait with a transaction-local setting: nothing of it may
    outlive the statement on the connection (a pooler hands that connection to someone else)."""
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console")

    async def go() -> tuple[str, str, TickResult]:
        tick_conn = await db.connect(database_url)
        try:
            before = await (await tick_conn.execute("select current_setting('synchronous_commit')")).fetchone()
            result = await run_tick(tick_conn, settings, now=db_now(conn), source="test")
            after = await (await tick_conn.execute("select current_setting('synchronous_commit')")).fetchone()
        finally:
            await tick_conn.close()
        assert before is not None and after is not None
        return before[0], after[0], result

    before, after, result = asyncio.run(go())
    assert result.jobs.claimed == 0 and len(ticks_logged(conn)) == 1  # it was idle, and logged
    assert after == before == "on"


def test_a_declared_schedule_keeps_the_tick_idle_until_its_slot(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    from crontick.schedules import registry

    registry.unregister("t_perf-hourly")
    crontick.schedule("t_perf-hourly", "0 * * * *", "t_perf.noop", {"n": 0})
    try:
        settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console")
        _, first = traced_tick(database_url, settings, db_now(conn))
        assert first[:2] == ["tick_probe", "schedule_due"]  # new declarations: synced once, though nothing is due
        result, statements = traced_tick(database_url, settings, db_now(conn))
        assert statements == ["tick_probe"]  # synced, and the next slot is ahead: idle
        (next_at,) = conn.execute("select next_at from crontick_schedules where name = 't_perf-hourly'").fetchone()  # type: ignore[misc]
        assert result.next_due_at == next_at and next_at.minute == 0
    finally:
        registry.unregister("t_perf-hourly")


def declare_daily(count: int, hour: int) -> list[str]:
    """`count` daily schedules at `hour` (UTC), a third of each catch-up policy; returns their names."""
    names = [f"t_perf-{count}-{n:04d}" for n in range(count)]
    for n, name in enumerate(names):
        policy = ("latest", "all", "skip")[n % 3]
        crontick.schedule(name, f"{n % 60} {hour} * * *", "t_perf.noop", {"n": n}, catch_up=policy)
    return names


def schedule_ticks(admin_url: str, template_name: str, count: int) -> dict[str, list[str]]:
    """The statements of the sync tick, an idle tick and a tick where all `count` schedules are due."""
    from crontick.schedules import registry

    with fresh_database(admin_url, template_name) as url, psycopg.connect(url, autocommit=True) as conn:
        now = db_now(conn)
        names = declare_daily(count, (now.hour + 12) % 24)  # nothing due for hours: the idle tick stays idle
        try:
            settings = Settings(database_url=url, cron_secret=TEST_SECRET, reminder_channel="console")
            seen = {"sync": traced_tick(url, settings, db_now(conn))[1]}
            seen["idle"] = traced_tick(url, settings, db_now(conn))[1]
            # Each cursor a day back: every schedule has exactly one slot to decide, all in this tick.
            conn.execute("update crontick_schedules set evaluated_until = evaluated_until - interval '1 day'")
            conn.execute("update crontick_schedules set next_at = '-infinity'")
            ran.clear()
            result, seen["due"] = traced_tick(url, settings, db_now(conn))
            # A slot half a day old is past the grace for catch_up="skip": a third are skipped.
            assert result.schedules.enqueued + result.schedules.skipped == count, result.schedules
            assert result.schedules.enqueued == count - count // 3
            assert result.jobs.claimed == min(result.schedules.enqueued, settings.batch_size) == len(ran)
        finally:
            for name in names:
                registry.unregister(name)
        return seen


def test_a_thousand_declared_schedules_cost_no_more_statements_than_one(admin_url: str, template_name: str) -> None:
    one, thousand = (schedule_ticks(admin_url, template_name, count) for count in (1, 1000))
    assert thousand == one, (one, thousand)
    assert thousand["idle"] == ["tick_probe"]
    # First sight: the declarations are sent, and each new schedule's next slot is computed and stored.
    assert thousand["sync"] == ["tick_probe", "schedule_due", "schedule_apply", "job_record_outcomes"]
    assert thousand["due"] == ["tick_probe", "schedule_due", "schedule_apply", "job_claim_due", "job_record_outcomes"]


def test_the_declared_set_is_hashed_once_per_change_not_per_tick() -> None:
    """A tick asks whether this process's declarations are synced; with 1,000 of them, hashing the
    whole set on every idle tick cost it a third of its time. The digest is kept until the set changes."""
    from crontick.schedules import registry

    names = declare_daily(3, 5)
    try:
        first = registry._declared_and_digest()
        assert registry._declared_and_digest() is first  # unchanged: not recomputed
        assert first[1] == registry.digest(registry.declared())
        crontick.schedule("t_perf-extra", "0 6 * * *", "t_perf.noop", {"n": 0})
        added = registry._declared_and_digest()
        assert added[1] != first[1] and [s.name for s in added[0]] == sorted([*names, "t_perf-extra"])
        registry.unregister("t_perf-extra")
        assert registry._declared_and_digest()[1] == first[1]
    finally:
        for name in [*names, "t_perf-extra"]:
            registry.unregister(name)


def test_the_idle_ticks_quick_commit_takes_effect_though_the_probe_is_a_function(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """The probe sets synchronous_commit inside crontick_tick_probe: the setting must reach the commit
    (a SET clause for it on the function would end it at the function's exit), and only when idle."""
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console")

    async def commit_setting(jobs_due: bool) -> str:
        if jobs_due:
            conn.execute("insert into jobs (type, payload) values ('t_perf.noop', '{\"n\": 0}')")
        tick_conn = await db.connect(database_url)
        try:
            async with tick_conn.transaction(force_rollback=True):
                await probe.look(tick_conn, settings, None, "test", {})
                row = await (await tick_conn.execute("select current_setting('synchronous_commit')")).fetchone()
        finally:
            await tick_conn.close()
        assert row is not None
        return str(row[0])

    assert asyncio.run(commit_setting(jobs_due=False)) == "off"
    assert asyncio.run(commit_setting(jobs_due=True)) == "on"
