"""The record statement's two paths write the same rows and answer the same: all succeeded (the quick one), or any other mix.

crontick_job_record_outcomes (sql/functions/job_record_outcomes.sql) takes a shorter statement when every outcome is
a success, the usual batch. Here one batch goes through each path: the same jobs, the same
outcomes (one of them fenced off), the successes sent once as the two id arrays (quick path)
and once as JSON rows (the general path, which is what any failure in a batch takes).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Json, Jsonb

from crontick import db

RECORD = """
select written, succeeded, retried, failed, released, fenced, jobs_due, next_job_at, snoozed, alerts_due
from crontick_job_record_outcomes(%(now)s, %(ids)s, %(attempts)s, %(others)s, true, %(now)s, 'test', %(summary)s,
    %(jobs)s, %(next_other_at)s)
"""
JOB = (
    "select status, attempts, run_after, last_error, locked_until, finished_at, updated_at, snoozes, started_at "
    "from jobs where id = %(id)s"
)


def claimed_batch(conn: psycopg.Connection[Any], tag: str, now: datetime) -> list[int]:
    """Three jobs claimed (running, attempt 1), and a pending one due later (for next_job_at)."""
    conn.execute(
        "insert into jobs (type, payload, run_after) select 't', jsonb_build_object('tag', %(tag)s::text, 'n', n), %(at)s "
        "from generate_series(1, 3) n",
        {"tag": tag, "at": now - timedelta(seconds=1)},
    )
    rows = conn.execute(
        "select jobs from crontick_job_claim_due(%(now)s, 3, interval '30 seconds')", {"now": now}
    ).fetchone()
    assert rows is not None
    ids = [job[0] for job in rows[0]]
    # An earlier attempt's error, which a success clears.
    conn.execute("update jobs set last_error = 'earlier' where id = any(%(ids)s)", {"ids": ids})
    return ids


def record(conn: psycopg.Connection[Any], now: datetime, ids: list[int], quick: bool) -> dict[str, Any]:
    attempts = [1, 1, 2]  # the third was claimed at attempt 1: fenced off, as if another tick had taken it over
    params: dict[str, Any] = {
        "now": now,
        "summary": Jsonb({"reminders": {"sent": 0}, "more": False}),
        "jobs": Jsonb({"claimed": 3, "rescued": 0, "expired": 0}),
        "next_other_at": now + timedelta(hours=5),
    }
    if quick:
        params.update(ids=ids, attempts=attempts, others=Json([]))
    else:
        rows = [
            [job_id, attempt, "done", attempt, None, None, False] for job_id, attempt in zip(ids, attempts, strict=True)
        ]
        params.update(ids=[], attempts=[], others=Json(rows))
    cur = conn.cursor(row_factory=dict_row)
    answer = cur.execute(RECORD, params).fetchone()
    assert answer is not None
    return answer


def test_the_quick_path_writes_and_answers_as_the_general_one(conn: psycopg.Connection[Any]) -> None:
    now = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    conn.execute(
        "insert into jobs (type, payload, run_after) values ('t', '{}', %(at)s)", {"at": now + timedelta(hours=2)}
    )
    paths = {}
    for quick in (True, False):
        ids = claimed_batch(conn, f"quick={quick}", now)
        answer = record(conn, now, ids, quick)
        jobs = [conn.execute(JOB, {"id": job_id}).fetchone() for job_id in ids]
        logged = conn.execute(
            "select summary, started_at, finished_at, source from crontick_ticks order by id desc limit 1"
        ).fetchone()
        history = conn.execute("select count(*) from job_attempts where job_id = any(%(ids)s)", {"ids": ids}).fetchone()
        assert answer.pop("written") == ids[:2]
        paths[quick] = (answer, jobs, logged, history)
    assert paths[True] == paths[False]
    answer, jobs, logged, history = paths[True]
    assert (answer["succeeded"], answer["fenced"], answer["retried"], answer["failed"]) == (2, 1, 0, 0)
    assert answer["next_job_at"] == now + timedelta(hours=2) and answer["jobs_due"] is False
    assert [j[0] for j in jobs] == ["done", "done", "running"] and history == (0,)
    assert logged is not None
    summary = logged[0]
    assert summary["jobs"] == {"claimed": 3, "rescued": 0, "succeeded": 2, "retried": 0, "failed": 0, "released": 0,
                               "fenced": 1, "snoozed": 0, "yielded": 0, "expired": 0}  # fmt: skip
    assert json.dumps(summary["jobs"]) == json.dumps(paths[False][2][0]["jobs"])  # the same keys, in the same order
    assert datetime.fromisoformat(summary["next_due_at"]) == now + timedelta(hours=2)


def test_a_batch_with_one_failure_takes_the_general_path_and_records_it(conn: psycopg.Connection[Any]) -> None:
    now = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
    ids = claimed_batch(conn, "mixed", now)
    rows = [[ids[2], 1, "pending", 1, (now + timedelta(minutes=1)).isoformat(), "boom", False]]
    cur = conn.execute(
        RECORD,
        {
            "now": now,
            "ids": ids[:2],
            "attempts": [1, 1],
            "others": Json(rows),
            "summary": Jsonb({}),
            "jobs": Jsonb({"claimed": 3, "rescued": 0, "expired": 0}),
            "next_other_at": None,
        },
    )
    answer = cur.fetchone()
    assert answer is not None and answer[1:6] == (2, 1, 0, 0, 0)
    history = conn.execute("select job_id, outcome, error from job_attempts").fetchall()
    assert history == [(ids[2], "retried", "boom")]
    assert db.query("job_record_outcomes")  # the statement the tick sends calls this function
