"""The group commit of finished steps (crontick.workflows.commit) from sync (`def`) handlers' threads: a batch of
quick `def` workflows writes its steps in about as few statements as its `async def` twin, each step still
committed before job.step returns, and a thread whose round the ending loop cancels gets an error, not a hang."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

import psycopg

import crontick
from crontick.errors import StepError
from crontick.workflows.commit import GroupCommit
from tests.support.wire import tick_statements

JOBS = 100
CONCURRENCY = 10  # the default
committed_before: list[bool] = []


def _noop(n: int) -> int:
    return n


def _recorded(job: crontick.Job, name: str) -> bool:
    """Whether step `name` of `job` is committed, seen from a connection of its own."""
    with psycopg.connect(_url[0], autocommit=True) as other:
        row = other.execute(
            "select 1 from crontick.job_steps where job_id = %(id)s and name = %(name)s", {"id": job.id, "name": name}
        ).fetchone()
    return row is not None


_url = [""]


@crontick.handler("t_commit.three")
def three(payload: Any, job: crontick.Job) -> None:
    a = job.step("a", _noop, 1)
    b = job.step("b", _noop, a + 1)
    job.step("c", _noop, b + 1)
    if payload.get("check"):
        committed_before.append(_recorded(job, "c"))


def _tick(url: str, conn: psycopg.Connection[Any]) -> Counter[str]:
    return tick_statements(url, conn, jobs=JOBS, concurrency=CONCURRENCY)


def test_def_workflows_steps_go_together_as_their_async_twins_do(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    crontick.enqueue_many(conn, [("t_commit.three", {})] * JOBS)
    sent = _tick(database_url, conn)
    assert sent["job_steps_load"] == 1
    # 300 steps from 10 threads at a time: the async twin needs 30 rounds of 10 and a few more to start. A round per
    # thread's step (the threads' writes not waited for) made 100 or more.
    assert sent["job_steps_record"] <= 60, sent
    assert conn.execute("select count(*) from job_steps").fetchone() == (3 * JOBS,)


def test_a_def_handlers_step_is_committed_before_job_step_returns(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    _url[0] = database_url
    committed_before.clear()
    crontick.enqueue_many(conn, [("t_commit.three", {"check": True})] * JOBS)
    _tick(database_url, conn)
    assert committed_before == [True] * JOBS


def test_a_thread_waiting_for_a_round_the_loop_never_finishes_gets_an_error_not_a_hang(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ended: list[BaseException | None] = []

    def write(commit: GroupCommit) -> None:
        try:
            commit.write_in_thread(1, 1, "a", "1", None)
            ended.append(None)
        except BaseException as exc:  # noqa: BLE001 - what the thread saw is the test's subject
            ended.append(exc)

    async def loop_that_ends_mid_round() -> threading.Thread:
        other = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
        commit = GroupCommit(other, asyncio.get_running_loop(), lambda ids: None)
        thread = threading.Thread(target=write, args=(commit,))
        thread.start()
        await asyncio.sleep(0.5)  # the round is on the wire, waiting behind the lock
        return thread  # asyncio.run then cancels the round

    with conn.transaction():
        conn.execute("lock table crontick.job_steps")  # the round's statement waits behind it
        thread = asyncio.run(loop_that_ends_mid_round())
        thread.join(5)
    # The round on the wire is cancelled: its writes get the cancellation; one queued behind it, a StepError.
    assert not thread.is_alive() and len(ended) == 1, ended
    assert isinstance(ended[0], (asyncio.CancelledError, StepError)), ended


def test_a_thread_whose_rounds_statement_fails_gets_that_error(database_url: str) -> None:
    ended: list[BaseException | None] = []

    def write(commit: GroupCommit) -> None:
        try:
            commit.write_in_thread(1, 1, "a", "1", None)
            ended.append(None)
        except BaseException as exc:  # noqa: BLE001 - what the thread saw is the test's subject
            ended.append(exc)

    async def round_on_a_closed_connection() -> None:
        other = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
        await other.close()  # the round's statement fails at once
        commit = GroupCommit(other, asyncio.get_running_loop(), lambda ids: None)
        thread = threading.Thread(target=write, args=(commit,))
        thread.start()
        while thread.is_alive():
            await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(round_on_a_closed_connection(), 10))
    assert len(ended) == 1 and isinstance(ended[0], psycopg.OperationalError), ended
