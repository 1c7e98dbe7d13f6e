"""A NUL byte (or a lone surrogate) in a step's result, a step's, sleep's or wait's name or a wait's event key costs only
its own job: that job's attempt fails at the call with an "expected ..., got ..." error, while the other jobs of its
batch keep their recorded steps, run their side effects once, and the tick answers 200."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.app import create_app
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import db_now, job_row, settings_for, tick
from tests.support.servers import serve

charges: Counter[int] = Counter()
# A payload cannot carry them (jsonb refuses both): the handlers put them in where a payload says.
_ODD = {"<NUL>": "\x00", "<SURROGATE>": "\udc80"}


def _odd(text: str) -> str:
    for mark, char in _ODD.items():
        text = text.replace(mark, char)
    return text


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    charges.clear()


async def _charge(job: crontick.Job, result: Any) -> Any:
    charges[job.id] += 1  # the side effect: it must happen once per good job, whatever its neighbours return
    await asyncio.sleep(0)
    return result


@crontick.handler("t_wfnul.charge")
async def charge(payload: Any, job: crontick.Job) -> None:
    result = payload["result"]
    await job.step("charge", _charge, job, {"text": _odd(result)} if isinstance(result, str) else result)
    await job.step("receipt", _charge, job, "sent")


@crontick.handler("t_wfnul.misnamed")
async def misnamed(payload: Any, job: crontick.Job) -> None:
    await job.step("charge", _charge, job, "ok")
    how, text = payload["how"], _odd(payload["text"])
    if how == "step":
        await job.step(text, _charge, job, "never recorded")
    elif how == "sleep":
        await job.sleep(text, 60)
    elif how == "wait":
        await job.wait_for(text, "reply:1", timeout_seconds=60)
    else:
        await job.wait_for("reply", text, timeout_seconds=60)


def _step_names(conn: psycopg.Connection[Any], job_id: int) -> list[str]:
    rows = conn.execute("select name from job_steps where job_id = %(id)s order by name", {"id": job_id}).fetchall()
    return [name for (name,) in rows]


@pytest.mark.parametrize(
    ("bad", "got"),
    [("card<NUL>declined", "a NUL (\\u0000)"), ("<SURROGATE>", "a lone surrogate")],
    ids=["nul", "lone_surrogate"],
)
def test_a_result_jsonb_refuses_fails_only_its_own_job_and_the_others_steps_stay_recorded(
    database_url: str, conn: psycopg.Connection[Any], bad: Any, got: str
) -> None:
    # Five jobs of one batch whose first steps finish together: their results go in one group commit.
    good = [crontick.enqueue(conn, "t_wfnul.charge", {"result": {"amount": i}}) for i in range(2)]
    bad_id = crontick.enqueue(conn, "t_wfnul.charge", {"result": bad})
    good += [crontick.enqueue(conn, "t_wfnul.charge", {"result": {"amount": i}}) for i in range(2, 4)]
    now = db_now(conn)
    result = tick(database_url, now=now)
    assert (result.jobs.claimed, result.jobs.succeeded, result.jobs.failed) == (5, 4, 1)
    for job_id in good:
        assert job_row(conn, job_id)["status"] == "done"
        assert _step_names(conn, job_id) == ["charge", "receipt"]
    row = job_row(conn, bad_id)
    assert row["status"] == "failed"  # a StepError: running it again would return the same value
    assert row["last_error"].startswith(
        f"StepError: job {bad_id} (t_wfnul.charge) step 'charge': expected JSON whose strings hold no NUL or lone "
        f"surrogate (jsonb refuses both), got one with {got}"
    )
    assert _step_names(conn, bad_id) == []  # nothing of it was written
    assert charges == {**{job_id: 2 for job_id in good}, bad_id: 1}  # each good job's charge and receipt once


@pytest.mark.parametrize(
    ("how", "text", "what"),
    [
        ("step", "total<NUL>", "job.step: expected a name"),
        ("sleep", "nap<NUL>", "job.sleep: expected a name"),
        ("wait", "<NUL>reply", "job.wait_for: expected a name"),
        ("key", "reply:<NUL>", "job.wait_for('reply'): expected an event key"),
        ("key", "reply:<SURROGATE>", "job.wait_for('reply'): expected an event key"),
    ],
)
def test_a_nul_in_a_name_or_a_wait_key_fails_only_its_job_and_the_tick_answers_200(
    database_url: str, conn: psycopg.Connection[Any], how: str, text: str, what: str
) -> None:
    good = [crontick.enqueue(conn, "t_wfnul.charge", {"result": {"amount": i}}) for i in range(3)]
    bad_id = crontick.enqueue(conn, "t_wfnul.misnamed", {"how": how, "text": text})
    app = create_app(settings_for(database_url))
    with serve(app) as base:
        answer = httpx.post(f"{base}/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["jobs"] | {"claimed": 4, "succeeded": 3, "failed": 1} == answer.json()["jobs"]
    assert [job_row(conn, job_id)["status"] for job_id in good] == ["done"] * 3
    row = job_row(conn, bad_id)
    assert row["status"] == "failed"
    assert row["last_error"].startswith(f"StepError: job {bad_id} (t_wfnul.misnamed) {what} without NUL (\\x00)")
    assert _step_names(conn, bad_id) == ["charge"]  # its step before the bad call stays recorded
    assert charges == {**{job_id: 2 for job_id in good}, bad_id: 1}
