"""Work held by a pause books no wake-up (a pause has no release time: it was a wake-up a minute for nothing), and
resuming starts a tick at once, which runs what is due and books what comes due later (issue 35).

Over real HTTP: the app under uvicorn with CRONTICK_WAKER=qstash through the QStash stand-in
(tests/support/qstash_server.py), CRONTICK_KICK=inline, and the admin API's resume.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import httpx
import psycopg

import crontick
from tests.support import core_jobs  # noqa: F401  (registers the t_core.* job types)
from tests.support.waking import posted_tick
from tests.tick.support import waking_app

ADMIN_SECRET = "pause-admin-secret-" + "p" * 32
PAUSED = "t_core.ok"
LIMIT = "t_wakepause.provider"  # a rate limit, and the one type that uses it
LIMITED = "t_wakepause.limited"

crontick.rate_limit(LIMIT, 5, per_seconds=60)


@crontick.handler(LIMITED, rate_limit=LIMIT)
async def limited(payload: Any, job: crontick.Job) -> None:
    """Does nothing: the test asks only whether and when it runs."""


def test_a_paused_due_job_books_nothing_and_resuming_runs_it_and_books_the_next(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    due = crontick.enqueue(conn, PAUSED, {})
    later_at: datetime = conn.execute("select now() + interval '1 hour'").fetchone()[0]  # type: ignore[index]
    later = crontick.enqueue(conn, PAUSED, {}, run_after=later_at)
    conn.execute("insert into crontick_pauses (kind, name) values ('type', %s)", (PAUSED,))
    with waking_app(database_url, kick="inline", admin_secret=ADMIN_SECRET) as (url, stand_in):
        for _ in range(3):  # a scheduler calling while the pause holds: no booking, however often
            body = posted_tick(url)
            assert (body["jobs"]["claimed"], body["more"], body["next_due_at"]) == (0, False, None)
            assert body["wakeups"] == {"booked": 0, "failed": 0}
        assert stand_in.published == []
        resumed = httpx.post(
            f"{url}/api/admin/types/{PAUSED}/resume", headers={"Authorization": f"Bearer {ADMIN_SECRET}"}, timeout=30
        )
        assert resumed.status_code == 200, resumed.text
        deadline = time.monotonic() + 20  # room for the kick on a busy machine: not a promise on speed
        while not stand_in.published and time.monotonic() < deadline:
            time.sleep(0.05)
        (published,) = stand_in.published  # booked by the tick the resume started
    assert int(published["headers"]["upstash-not-before"]) == int(-(-later_at.timestamp() // 1))  # the later job's
    statuses = dict(conn.execute("select id, status from jobs").fetchall())
    assert statuses == {due: "done", later: "pending"}
    kicked = conn.execute("select count(*) from crontick_ticks where source = 'kick'").fetchone()
    assert kicked is not None and kicked[0] >= 1


def test_a_paused_group_books_nothing(database_url: str, conn: psycopg.Connection[Any]) -> None:
    crontick.enqueue(conn, PAUSED, {}, group_key="chat:9")
    conn.execute("insert into crontick_pauses (kind, name) values ('group', 'chat:9')")
    with waking_app(database_url) as (url, stand_in):
        body = posted_tick(url)
    assert (body["jobs"]["claimed"], body["next_due_at"], body["wakeups"]) == (0, None, {"booked": 0, "failed": 0})
    assert stand_in.published == []


def test_a_paused_rate_limit_books_nothing_and_resuming_it_runs_its_job(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # Which types use a limit only the code knows: the tick passes them (the claim's flow argument) to the probe.
    job_id = crontick.enqueue(conn, LIMITED, {})
    conn.execute("insert into crontick_pauses (kind, name) values ('rate_limit', %s)", (LIMIT,))
    with waking_app(database_url, kick="inline", admin_secret=ADMIN_SECRET) as (url, stand_in):
        for _ in range(2):  # not a wake-up a minute (HELD_BACK_RECHECK) while the limit is paused
            body = posted_tick(url)
            assert (body["jobs"]["claimed"], body["more"], body["next_due_at"]) == (0, False, None)
            assert body["wakeups"] == {"booked": 0, "failed": 0}
        assert stand_in.published == []
        resumed = httpx.post(
            f"{url}/api/admin/rate-limits/{LIMIT}/resume",
            headers={"Authorization": f"Bearer {ADMIN_SECRET}"},
            timeout=30,
        )
        assert resumed.status_code == 200, resumed.text
        deadline = time.monotonic() + 20  # room for the kick on a busy machine: not a promise on speed
        while conn.execute("select status from jobs where id = %s", (job_id,)).fetchone() != ("done",):
            assert time.monotonic() < deadline, "the resume's kick did not run the limited job"
            time.sleep(0.05)
    kicked = conn.execute("select count(*) from crontick_ticks where source = 'kick'").fetchone()
    assert kicked is not None and kicked[0] >= 1  # the resume started a tick; no scheduler ran it
