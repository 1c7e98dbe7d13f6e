"""A drain's batches after the first cost one statement each: a tick's record also claims the next batch.

Counted on the wire, as tests/perf/test_round_trips.py counts a tick's statements.
"""

from __future__ import annotations

from typing import Any

import psycopg

import crontick
from crontick.settings import Settings
from crontick.tick.drain import drain
from crontick.tick.pipeline import TickResult
from tests.support.constants import TEST_SECRET
from tests.support.wire import traced

ran: list[int] = []


@crontick.handler("t_drain.noop")
async def noop(payload: Any, job: crontick.Job) -> None:
    ran.append(payload["n"])


def traced_drain(url: str, settings: Settings, **options: Any) -> tuple[TickResult, list[str]]:
    return traced(url, lambda conn: drain(conn, settings, source="test", **options))


def statuses(conn: psycopg.Connection[Any]) -> dict[str, int]:
    return dict(conn.execute("select status, count(*) from jobs group by status").fetchall())  # type: ignore[arg-type]


def test_a_drain_claims_each_next_batch_in_the_record_statement(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ran.clear()
    crontick.enqueue_many(conn, [("t_drain.noop", {"n": n}) for n in range(30)])
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console", batch_size=10)
    result, statements = traced_drain(database_url, settings)
    assert statements == [
        "tick_probe",  # the first tick looks at everything (reminders too) and claims batch 1
        "job_record_outcomes",
        "job_claim_due",  # batch 2
        "job_record_and_claim",  # batch 2's outcomes, and batch 3
        "job_record_and_claim",  # batch 3's outcomes; nothing left to claim
        "tick_probe",  # the drain ends on a probed tick: nothing due, anywhere
    ]
    assert sorted(ran) == list(range(30)) and result.jobs.succeeded == 30 and result.jobs.claimed == 30
    assert statuses(conn) == {"done": 30}
    # One log row per tick, each with its own batch's counts.
    logged = [r[0] for r in conn.execute("select summary from crontick_ticks order by id").fetchall()]
    assert [t["jobs"]["succeeded"] for t in logged] == [10, 10, 10, 0]


def test_a_drain_cut_short_by_max_ticks_leaves_no_batch_claimed(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ran.clear()
    crontick.enqueue_many(conn, [("t_drain.noop", {"n": n}) for n in range(30)])
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console", batch_size=10)
    result, statements = traced_drain(database_url, settings, max_ticks=3)
    assert statements[-1] == "job_record_outcomes"  # the last tick claims nothing ahead
    assert result.jobs.succeeded == 30 and statuses(conn) == {"done": 30}
    result, statements = traced_drain(database_url, settings, max_ticks=2)
    assert result.jobs.claimed == 0
    ran.clear()
    crontick.enqueue_many(conn, [("t_drain.noop", {"n": n}) for n in range(30, 60)])
    result, _ = traced_drain(database_url, settings, max_ticks=2)
    assert result.jobs.succeeded == 20 and sorted(ran) == list(range(30, 50))
    assert statuses(conn) == {"done": 50, "pending": 10}  # none left running under a lease


def test_a_drain_over_groups_sends_only_the_drains_own_statements(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """Groups are kept by the claim and by triggers in the database: no statement of their own on the wire, at
    most two a batch (a batch claimed ahead comes back short: one job per group), and each batch takes one
    job per group (30 jobs in 10 groups: three batches of 10)."""
    ran.clear()
    conn.execute(
        "insert into jobs (type, payload, group_key) select 't_drain.noop', jsonb_build_object('n', g), 'g' || (g % 10)"
        " from generate_series(0, 29) g order by g"
    )
    settings = Settings(database_url=database_url, cron_secret=TEST_SECRET, reminder_channel="console", batch_size=10)
    result, statements = traced_drain(database_url, settings)
    assert set(statements) == {"tick_probe", "job_record_outcomes", "job_claim_due", "job_record_and_claim"}
    assert statements[0] == statements[-1] == "tick_probe" and len(statements) <= 2 * 3 + 2, statements
    assert result.jobs.succeeded == 30 and statuses(conn) == {"done": 30}
    assert [sorted(ran[i : i + 10]) for i in (0, 10, 20)] == [list(range(i, i + 10)) for i in (0, 10, 20)]
