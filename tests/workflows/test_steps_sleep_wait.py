"""Durable sleep and wait-for-event in real ticks: a sleep spends no attempt and holds no lease; a wait is woken by a
committed signal (Python, SQL, psycopg2) and not by a rolled-back one; an early signal is kept and delivered; a timeout
returns None; one signal wakes the oldest waiter only."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from typing import Any

import psycopg
import psycopg2
import pytest
from psycopg.types.json import Jsonb

import crontick
from crontick import db
from crontick.text import KEY_MAX_BYTES, fit_key
from crontick.tick import retention
from tests.support.core_jobs import db_now, job_row, settings_for, tick
from tests.support.databases import url_of
from tests.support.keys import WIDEST_CHARS, key_of_bytes, widest_key

calls: Counter[tuple[int, str]] = Counter()
answers: dict[int, Any] = {}


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    calls.clear()
    answers.clear()


def _call(job: crontick.Job, name: str) -> str:
    calls[(job.id, name)] += 1
    return name


@crontick.handler("t_wfsleep.nap")
async def nap(payload: Any, job: crontick.Job) -> None:
    await job.step("before", _call, job, "before")
    await job.sleep("nap", payload["seconds"])
    await job.step("after", _call, job, "after")


@crontick.handler("t_wfsleep.nap_sync")
def nap_sync(payload: Any, job: crontick.Job) -> None:
    job.step("before", _call, job, "before")
    job.sleep("nap", payload["seconds"])
    job.step("after", _call, job, "after")


@crontick.handler("t_wfsleep.survey")
async def survey(payload: Any, job: crontick.Job) -> None:
    await job.step("ask", _call, job, "ask")
    answers[job.id] = await job.wait_for("answer", payload["key"], timeout_seconds=payload.get("timeout", 3600))
    await job.step("thank", _call, job, "thank")


def _due_after(conn: psycopg.Connection[Any], job_id: int) -> Any:
    return job_row(conn, job_id)["run_after"] + timedelta(seconds=1)


@pytest.mark.parametrize("kind", ["nap", "nap_sync"])
def test_a_sleep_spends_no_attempt_holds_no_lease_and_is_not_slept_again(
    database_url: str, conn: psycopg.Connection[Any], kind: str
) -> None:
    job_id = crontick.enqueue(conn, f"t_wfsleep.{kind}", {"seconds": 600}, max_attempts=1)
    now = db_now(conn)
    first = tick(database_url, now=now)
    assert (first.jobs.claimed, first.jobs.retried, first.jobs.failed, first.jobs.released) == (1, 0, 0, 0)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["locked_until"], row["snoozes"]) == ("pending", 0, None, 0)
    assert now + timedelta(seconds=600) <= row["run_after"] <= now + timedelta(seconds=610)
    assert tick(database_url, now=now + timedelta(seconds=300)).jobs.claimed == 0  # still asleep
    assert tick(database_url, now=_due_after(conn, job_id)).jobs.succeeded == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("done", 1)  # max_attempts=1, and the resume spent nothing
    assert calls == {(job_id, "before"): 1, (job_id, "after"): 1}
    kinds = conn.execute(
        "select name, kind, attempt from job_steps where job_id = %(id)s order by name", {"id": job_id}
    )
    assert kinds.fetchall() == [("after", "step", 1), ("before", "step", 1), ("nap", "sleep", 1)]


def test_a_wait_resumes_on_a_committed_signal_and_not_on_a_rolled_back_one(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "survey:ada"})
    now = db_now(conn)
    assert tick(database_url, now=now).jobs.claimed == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["locked_until"]) == ("waiting", 0, None)
    with pytest.raises(RuntimeError), conn.transaction():
        assert crontick.signal(conn, "survey:ada", {"answer": "NO"}) == job_id
        raise RuntimeError("the caller's transaction rolls back")
    assert job_row(conn, job_id)["status"] == "waiting"
    assert conn.execute("select count(*) from crontick_signals").fetchone() == (0,)
    assert tick(database_url, now=now + timedelta(seconds=5)).jobs.claimed == 0
    with conn.transaction():
        assert crontick.signal(conn, "survey:ada", {"answer": "YES"}) == job_id
    assert job_row(conn, job_id)["status"] == "pending"
    assert tick(database_url, now=db_now(conn) + timedelta(seconds=5)).jobs.succeeded == 1
    assert answers == {job_id: {"answer": "YES"}}
    assert calls == {(job_id, "ask"): 1, (job_id, "thank"): 1}
    assert job_row(conn, job_id)["attempts"] == 1
    status = conn.execute(
        "select status, result from job_steps where job_id = %(id)s and name = 'answer'", {"id": job_id}
    )
    assert status.fetchone() == ("signalled", {"answer": "YES"})


def test_signals_from_sql_and_psycopg2_wake_waiters_as_python_does(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    first = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "k:sql"})
    second = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "k:pg2"})
    now = db_now(conn)
    tick(database_url, now=now)
    assert conn.execute("select crontick.signal('k:sql', %(p)s)", {"p": Jsonb([1, 2])}).fetchone() == (first,)
    with psycopg2.connect(url_of(database_url)) as other, other.cursor() as cur:
        cur.execute("select crontick.signal(%s, %s::jsonb)", ("k:pg2", '"from psycopg2"'))
        assert cur.fetchone() == (second,)
    assert tick(database_url, now=db_now(conn) + timedelta(seconds=5)).jobs.succeeded == 2
    assert answers == {first: [1, 2], second: "from psycopg2"}


def test_a_signal_sent_before_the_wait_is_kept_and_delivered_when_it_begins(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "early"})  # one sent before the job: test_wait_since
    assert crontick.signal(conn, "early", {"n": 1}) is None  # nobody waits yet: kept
    assert conn.execute("select event_key, payload from crontick_signals").fetchall() == [("early", {"n": 1})]
    now = db_now(conn)
    parked = tick(database_url, now=now)
    assert parked.more  # delivered as the wait began: due again at once
    assert job_row(conn, job_id)["status"] == "pending"
    assert conn.execute("select count(*) from crontick_signals").fetchone() == (0,)  # consumed
    assert tick(database_url, now=now + timedelta(seconds=1)).jobs.succeeded == 1
    assert answers == {job_id: {"n": 1}}


def test_event_keys_within_the_bound_wait_as_given_and_longer_ones_meet_as_their_digest(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # 4-byte characters that do not compress (tests/support/keys.py): the most bytes a key within the bound takes.
    waited, kept = widest_key(WIDEST_CHARS), widest_key(WIDEST_CHARS, seed=1)
    long_ascii = "survey:" + "9" * 1993  # 2,000 characters: within the bound, which counts bytes
    too_long = widest_key(2000, seed=2)  # 8,000 bytes
    assert crontick.signal(conn, kept, "early") is None  # crontick_signals_key holds it
    jobs = [crontick.enqueue(conn, "t_wfsleep.survey", {"key": key}) for key in (waited, long_ascii, too_long)]
    parked = tick(database_url, now=db_now(conn))
    assert (parked.jobs.claimed, parked.jobs.failed) == (3, 0)
    waits = conn.execute("select job_id, event_key from job_steps where status = 'waiting' order by job_id")
    assert waits.fetchall() == list(zip(jobs, (waited, long_ascii, fit_key(too_long)), strict=True))
    for size in (KEY_MAX_BYTES + 1, 8000):  # the SQL function refuses what Python fits
        with pytest.raises(psycopg.errors.StringDataRightTruncation) as sql_info:
            conn.execute("select crontick.signal(%s, '1')", (key_of_bytes(size),))
        assert sql_info.value.diag.message_primary == (
            f"crontick.signal: expected an event key of at most 2,048 bytes (UTF-8), got {size}"
        )
    assert conn.execute("select crontick.signal(%s, '\"yes\"')", (waited,)).fetchone() == (jobs[0],)
    assert conn.execute("select crontick.signal(%s, '\"url\"')", (long_ascii,)).fetchone() == (jobs[1],)
    assert crontick.signal(conn, too_long, "fitted") == jobs[2]  # fitted as job.wait_for fitted it
    assert tick(database_url, now=db_now(conn) + timedelta(seconds=5)).jobs.succeeded == 3
    assert answers == dict(zip(jobs, ("yes", "url", "fitted"), strict=True))


def test_a_wait_that_times_out_returns_none(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "never", "timeout": 60})
    now = db_now(conn)
    tick(database_url, now=now)
    row = job_row(conn, job_id)
    assert row["status"] == "waiting" and now + timedelta(seconds=60) <= row["run_after"]
    early = tick(database_url, now=now + timedelta(seconds=30))
    assert early.jobs.claimed == 0 and job_row(conn, job_id)["status"] == "waiting"
    assert early.next_due_at == row["run_after"]  # the deadline is what is due next
    woke = tick(database_url, now=_due_after(conn, job_id))  # not idle: the record statement wakes it
    assert woke.more and job_row(conn, job_id)["status"] == "pending"
    assert tick(database_url, now=_due_after(conn, job_id)).jobs.succeeded == 1
    assert answers == {job_id: None}
    status = conn.execute("select status from job_steps where job_id = %(id)s and name = 'answer'", {"id": job_id})
    assert status.fetchone() == ("timed_out",)
    assert crontick.signal(conn, "never", 1) is None  # too late: kept for a wait to come, not delivered


def test_one_signal_wakes_the_oldest_waiter_only(database_url: str, conn: psycopg.Connection[Any]) -> None:
    now = db_now(conn)
    older = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "shared"})
    tick(database_url, now=now)
    newer = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "shared"})
    tick(database_url, now=now + timedelta(seconds=5))
    assert crontick.signal(conn, "shared", "one") == older
    assert (job_row(conn, older)["status"], job_row(conn, newer)["status"]) == ("pending", "waiting")
    assert crontick.signal(conn, "shared", "two") == newer
    assert tick(database_url, now=db_now(conn) + timedelta(seconds=10)).jobs.succeeded == 2
    assert answers == {older: "one", newer: "two"}


def test_waiting_jobs_are_neither_rescued_nor_deleted_by_retention_which_deletes_old_kept_signals(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "patient"})
    now = db_now(conn)
    tick(database_url, now=now)
    conn.execute("update jobs set updated_at = now() - interval '400 days' where id = %(id)s", {"id": job_id})
    crontick.signal(conn, "old", 1)
    crontick.signal(conn, "recent", 2)
    conn.execute("update crontick_signals set created_at = now() - interval '8 days' where event_key = 'old'")
    later = tick(database_url, now=now + timedelta(seconds=1800))
    assert later.jobs.rescued == 0

    async def delete_expired() -> Any:
        aconn = await db.connect(database_url)
        try:
            return await retention.run(
                aconn, settings_for(database_url), now=db_now(conn), deadline=60, clock=lambda: 0
            )
        finally:
            await aconn.close()

    assert asyncio.run(delete_expired()) is not None
    assert job_row(conn, job_id)["status"] == "waiting"
    assert conn.execute("select event_key from crontick_signals").fetchall() == [("recent",)]


SIGNALLER = """
import sys, time, psycopg2
conn = psycopg2.connect(sys.argv[1])
conn.autocommit = True
cur = conn.cursor()
for n in range(int(sys.argv[2])):
    cur.execute("select crontick.signal('race', %s::jsonb)", (str(n),))
    time.sleep(0.03)  # spread over the tick: some signals before the waits begin, some during, some after
"""


@pytest.mark.slow
def test_waits_beginning_while_processes_signal_lose_no_signal_and_wake_each_job_once(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """20 waits begin in one tick while 4 processes send 5 signals each on the same key: whatever the interleaving,
    each signal is consumed once (by a waiting job, or kept and taken by a wait as it begins), none is left."""
    ids = [crontick.enqueue(conn, "t_wfsleep.survey", {"key": "race"}) for _ in range(20)]
    signallers = [subprocess.Popen([sys.executable, "-c", SIGNALLER, url_of(database_url), "5"]) for _ in range(4)]
    now = db_now(conn)
    time.sleep(0.3)  # the processes start (about 0.2 s) and begin signalling
    tick(database_url, settings_for(database_url, batch_size=20, concurrency=20), now=now)
    for proc in signallers:
        assert proc.wait(timeout=60) == 0
    statuses = Counter(job_row(conn, i)["status"] for i in ids)
    assert statuses == {"pending": 20}, statuses
    assert conn.execute("select count(*) from crontick_signals").fetchone() == (0,)
    signalled = conn.execute("select count(*) from job_steps where name = 'answer' and status = 'signalled'")
    assert signalled.fetchone() == (20,)
    tick(
        database_url, settings_for(database_url, batch_size=20, concurrency=20), now=db_now(conn) + timedelta(seconds=5)
    )
    assert sorted(answers[i] for i in ids) == sorted(n for n in range(5) for _ in range(4))


def test_a_waiting_job_keeps_its_key(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_wfsleep.survey", {"key": "survey:kept"}, key="survey-job:ada")
    assert tick(database_url, now=db_now(conn)).jobs.claimed == 1
    assert job_row(conn, job_id)["status"] == "waiting"
    # Python's enqueue and the SQL function both find the waiting job instead of adding a second one.
    assert crontick.enqueue(conn, "t_wfsleep.survey", {"key": "survey:other"}, key="survey-job:ada") == job_id
    again = conn.execute("select crontick.enqueue('t_wfsleep.survey', '{}'::jsonb, key => 'survey-job:ada')")
    assert again.fetchone() == (job_id,)
    assert conn.execute("select count(*) from jobs where key = 'survey-job:ada'").fetchone() == (1,)
