"""Durable steps in real ticks: a finished step is not run again across failed attempts, names are unique, results are
JSON and bounded, step keys are stable, and a job that uses no step sends no step statement."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick import db
from crontick.tick.claim import claim_due, rescue_expired
from crontick.workflows import steps
from tests.support.core_jobs import db_now, job_row, tick

calls: Counter[tuple[int, str]] = Counter()
keys: list[str] = []


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    calls.clear()
    keys.clear()


def _call(job: crontick.Job, name: str, value: Any) -> Any:
    calls[(job.id, name)] += 1
    return value


@crontick.handler("t_wf.async_pipeline")
async def async_pipeline(payload: Any, job: crontick.Job) -> None:
    async def llm(context: dict[str, Any]) -> str:  # an async step function
        calls[(job.id, "llm")] += 1
        await asyncio.sleep(0)
        return f"reply to {context['text']}"

    context = await job.step("context", _call, job, "context", {"text": payload["text"]})
    reply = await job.step("llm", llm, context)
    keys.append(job.step_key("send"))
    if job.attempt < payload.get("fail_until", 0):
        raise ConnectionError(f"provider down on attempt {job.attempt}")
    await job.step("send", _call, job, "send", [reply, job.step_key("send")])


@crontick.handler("t_wf.sync_pipeline")
def sync_pipeline(payload: Any, job: crontick.Job) -> None:
    async def lookup() -> int:  # an async step function in a sync handler: run on the tick's loop
        calls[(job.id, "lookup")] += 1
        return 7

    context = job.step("context", _call, job, "context", (1, 2))
    assert context == [1, 2]  # as JSON gives it back, on the first run as on the later ones
    assert job.step("lookup", lookup) == 7
    if job.attempt < payload.get("fail_until", 0):
        raise ConnectionError(f"provider down on attempt {job.attempt}")
    job.step("send", _call, job, "send", None)


@crontick.handler("t_wf.parallel")
async def parallel(payload: Any, job: crontick.Job) -> None:
    async def part(name: str) -> str:
        calls[(job.id, name)] += 1
        if name == "b" and job.attempt == 1:
            raise RuntimeError("b fails once")
        return name

    got = await asyncio.gather(*(job.step(name, part, name) for name in ("a", "b", "c")), return_exceptions=True)
    for value in got:
        if isinstance(value, BaseException):
            raise value


@crontick.handler("t_wf.misused")
async def misused(payload: Any, job: crontick.Job) -> None:
    if payload["how"] == "twice":
        await job.step("same", _call, job, "same", 1)
        await job.step("same", _call, job, "same", 2)
    elif payload["how"] == "not_json":
        await job.step("obj", _call, job, "obj", object())
    elif payload["how"] == "too_big":
        await job.step("big", _call, job, "big", "x" * (steps.STEP_RESULT_MAX_BYTES + 1))


@crontick.handler("t_wf.taken_over")
async def taken_over(payload: Any, job: crontick.Job) -> None:
    async def slow_call() -> str:
        # Plays a step that outlived the lease: another tick rescues the job and claims it again meanwhile.
        other = await db.connect(payload["url"])
        try:
            now = datetime.now(UTC)
            await other.execute(
                "update jobs set locked_until = %(t)s where id = %(id)s",
                {"t": now - timedelta(minutes=1), "id": job.id},
            )
            await rescue_expired(other, now)
            assert [j.id for j in await claim_due(other, now, 10, 60)] == [job.id]
        finally:
            await other.close()
        return "late"

    await job.step("late", slow_call)
    calls[(job.id, "after")] += 1


def _steps(conn: psycopg.Connection[Any], job_id: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "select name, kind, status, attempt, result from job_steps where job_id = %(id)s order by created_at, name",
        {"id": job_id},
    ).fetchall()


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_retry_does_not_run_the_finished_steps_again(
    database_url: str, conn: psycopg.Connection[Any], kind: str
) -> None:
    job_id = crontick.enqueue(conn, f"t_wf.{kind}_pipeline", {"text": "hi", "fail_until": 3}, max_attempts=4)
    now = db_now(conn)
    for attempt in (1, 2):
        result = tick(database_url, now=now)
        assert (result.jobs.claimed, result.jobs.retried) == (1, 1)
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("pending", attempt)
        now = row["run_after"] + timedelta(seconds=1)
    assert tick(database_url, now=now).jobs.succeeded == 1
    assert job_row(conn, job_id)["status"] == "done"
    first = "context"
    middle = "llm" if kind == "async" else "lookup"
    assert calls == {(job_id, first): 1, (job_id, middle): 1, (job_id, "send"): 1}
    recorded = _steps(conn, job_id)
    assert [(name, kind_, status, attempt) for name, kind_, status, attempt, _ in recorded] == [
        (first, "step", "done", 1),
        (middle, "step", "done", 1),
        ("send", "step", "done", 3),
    ]


def test_step_keys_are_stable_across_attempts_and_distinct_per_step_and_job(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    one = crontick.enqueue(conn, "t_wf.async_pipeline", {"text": "a", "fail_until": 2})
    other = crontick.enqueue(conn, "t_wf.async_pipeline", {"text": "b"})
    now = db_now(conn)
    tick(database_url, now=now)
    tick(database_url, now=job_row(conn, one)["run_after"] + timedelta(seconds=1))
    assert sorted(Counter(keys).values()) == [1, 2]  # one's key on both its attempts, the other's once
    by_job = {row[0]: row[1] for row in conn.execute("select job_id, result from job_steps where name = 'send'")}
    assert by_job[one][1] != by_job[other][1]
    assert by_job[one][1].startswith(f"crontick-{one}-") and len(by_job[one][1]) <= 64
    assert set(keys) == {by_job[one][1], by_job[other][1]}


def test_parallel_steps_each_run_once_and_only_the_failed_one_again(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wf.parallel", {})
    now = db_now(conn)
    assert tick(database_url, now=now).jobs.retried == 1
    assert sorted(name for name, *_ in _steps(conn, job_id)) == ["a", "c"]
    assert tick(database_url, now=job_row(conn, job_id)["run_after"] + timedelta(seconds=1)).jobs.succeeded == 1
    assert calls == {(job_id, "a"): 1, (job_id, "b"): 2, (job_id, "c"): 1}


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("twice", "expected each step name once per run, got 'same' twice"),
        ("not_json", "step 'obj': expected a JSON result"),
        ("too_big", f"step 'big': expected a result of at most {steps.STEP_RESULT_MAX_BYTES} bytes"),
    ],
)
def test_a_misused_step_fails_the_job_at_once_naming_the_step(
    database_url: str, conn: psycopg.Connection[Any], how: str, expected: str
) -> None:
    job_id = crontick.enqueue(conn, "t_wf.misused", {"how": how})
    assert tick(database_url, now=db_now(conn)).jobs.failed == 1
    row = job_row(conn, job_id)
    assert row["status"] == "failed"
    assert expected in row["last_error"] and f"job {job_id} (t_wf.misused)" in row["last_error"]
    assert [name for name, *_ in _steps(conn, job_id)] == (["same"] if how == "twice" else [])


def test_a_step_that_finishes_after_a_rescue_records_nothing_and_stops_the_handler(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_wf.taken_over", {"url": database_url})
    result = tick(database_url)
    assert result.jobs.fenced == 1
    assert _steps(conn, job_id) == []
    assert calls == {}  # the handler stopped at the step (crontick.errors.StepFenced)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("running", 2)  # the attempt that took over stands


def test_a_step_outside_a_tick_says_so() -> None:
    job = crontick.Job(1, "t_wf.misused", {}, 1, 4, datetime.now(UTC))
    with pytest.raises(crontick.CrontickError, match="expected job.step inside a handler run by a tick"):
        job.step("x", lambda: 1)
    assert job.step_key("x") == job.step_key("x") != job.step_key("y")
