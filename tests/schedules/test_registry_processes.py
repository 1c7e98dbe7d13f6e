"""Eight `crontick tick` processes racing across a slot boundary enqueue that slot once."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from tests.support.core_jobs import wait_for
from tests.support.run_cli import cli_env, crontick, spawn

PROCESSES = 8


@pytest.mark.slow
def test_eight_ticks_across_a_slot_boundary_enqueue_it_once(database_url: str, conn: psycopg.Connection[Any]) -> None:
    env = cli_env(database_url, CRONTICK_HANDLERS="tests.schedules.schedule_handlers")
    first = crontick("tick", env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["schedules"] == {"enqueued": 0, "skipped": 0}  # first sight: no backfill
    # The last tick ran one second before the latest minute: that minute's slot is now due.
    conn.execute(
        "update crontick_schedules set evaluated_until = date_trunc('minute', now()) - interval '1 second',"
        " next_at = date_trunc('minute', now())"
    )
    (boundary,) = conn.execute("select next_at from crontick_schedules").fetchone()  # type: ignore[misc]
    with psycopg.connect(database_url) as gate:
        # Hold all eight at their first schedule statement until every one waits there, so they really race.
        gate.execute("lock table crontick_schedules in access exclusive mode")
        procs = [spawn("tick", env=env) for _ in range(PROCESSES)]
        waiting = "select count(*) from pg_locks where relation = 'crontick_schedules'::regclass and not granted"
        wait_for(conn, waiting, PROCESSES, f"{PROCESSES} ticks waiting on crontick_schedules", timeout_seconds=60)
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * PROCESSES, [err for _, err in outputs]
    summaries = [json.loads(out) for out, _ in outputs]

    slots = conn.execute(
        "select scheduled_for, count(*) from jobs where schedule = 'every-minute' group by 1"
    ).fetchall()
    seen = f"boundary {boundary}, jobs per slot {slots}, summaries {summaries}"
    assert dict(slots).get(boundary) == 1, seen
    assert {n for _, n in slots} == {1}, seen
    assert sum(s["schedules"]["enqueued"] for s in summaries) == len(slots), (
        seen
    )  # (a tick may also see the next minute)
    rows = conn.execute("select count(*) from crontick_schedule_slots where outcome = 'enqueued'").fetchone()
    assert rows == (len(slots),)
    # The boundary job ran in the tick that enqueued it (evaluation comes before the claim).
    status = conn.execute("select status, last_error from jobs where scheduled_for = %(b)s", {"b": boundary}).fetchone()
    assert status == ("done", None), (status, seen)
