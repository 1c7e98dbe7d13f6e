"""Enqueue: inside the caller's transaction (outbox), de-duplicated by key, sync or async connection."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import CrontickError
from tests.support.core_jobs import job_row, tick, wait_for


def _count(conn: psycopg.Connection[Any]) -> int:
    return int(conn.execute("select count(*) from jobs").fetchone()[0])  # type: ignore[index]


def test_job_commits_with_the_change_that_caused_it(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute("create table users (id int primary key, email text)")
    with psycopg.connect(database_url) as app, app.transaction():
        app.execute("insert into users values (42, 'ada@example.com')")
        job_id = crontick.enqueue(app, "send_welcome_email", {"user_id": 42}, key="welcome:42")
        # Not visible to anyone else until the transaction commits.
        assert _count(conn) == 0
    row = job_row(conn, job_id)
    assert (row["type"], row["payload"], row["status"], row["key"]) == (
        "send_welcome_email",
        {"user_id": 42},
        "pending",
        "welcome:42",
    )
    assert conn.execute("select count(*) from users").fetchone() == (1,)


def test_rolled_back_transaction_leaves_no_job(database_url: str, conn: psycopg.Connection[Any]) -> None:
    conn.execute("create table users (id int primary key, email text)")
    with pytest.raises(RuntimeError), psycopg.connect(database_url) as app, app.transaction():
        app.execute("insert into users values (42, 'ada@example.com')")
        crontick.enqueue(app, "send_welcome_email", {"user_id": 42})
        raise RuntimeError("signup failed after the job was enqueued")
    assert _count(conn) == 0
    assert conn.execute("select count(*) from users").fetchone() == (0,)


def test_enqueue_sets_run_after_and_max_attempts(conn: psycopg.Connection[Any]) -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    row = job_row(conn, crontick.enqueue(conn, "t_core.ok", [1, "two"], run_after=at, max_attempts=7))
    assert (row["payload"], row["run_after"], row["max_attempts"], row["attempts"]) == ([1, "two"], at, 7, 0)


def test_key_de_duplicates_while_the_job_is_pending(conn: psycopg.Connection[Any]) -> None:
    first = crontick.enqueue(conn, "t_core.ok", {"v": 1}, key="k1")
    second = crontick.enqueue(conn, "t_core.ok", {"v": 2}, key="k1")
    other = crontick.enqueue(conn, "t_core.ok", {"v": 3}, key="k2")
    assert first == second != other
    assert _count(conn) == 2
    assert job_row(conn, first)["payload"] == {"v": 1}  # the first job wins


def test_key_de_duplicates_while_the_job_is_running(conn: psycopg.Connection[Any]) -> None:
    first = crontick.enqueue(conn, "t_core.ok", {}, key="k")
    conn.execute("update jobs set status = 'running', locked_until = now() + interval '1 minute'")
    assert crontick.enqueue(conn, "t_core.ok", {}, key="k") == first


def test_key_is_reusable_after_the_job_finished(database_url: str, conn: psycopg.Connection[Any]) -> None:
    first = crontick.enqueue(conn, "t_core.ok", {}, key="daily-report")
    tick(database_url, now=datetime.now(UTC) + timedelta(seconds=1))
    assert job_row(conn, first)["status"] == "done"
    second = crontick.enqueue(conn, "t_core.ok", {}, key="daily-report")
    assert second != first
    failed = crontick.enqueue(conn, "t_core.permanent", {}, key="once")
    tick(database_url, now=datetime.now(UTC) + timedelta(seconds=1))
    assert job_row(conn, failed)["status"] == "failed"
    assert crontick.enqueue(conn, "t_core.permanent", {}, key="once") != failed


def test_key_raced_by_an_open_transaction_returns_its_job_once_it_commits(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    result: list[int] = []
    with psycopg.connect(database_url) as first:
        first_id = crontick.enqueue(first, "t_core.ok", {}, key="race")  # transaction left open

        def second() -> None:
            with psycopg.connect(database_url, autocommit=True) as c:
                result.append(crontick.enqueue(c, "t_core.ok", {}, key="race"))

        thread = threading.Thread(target=second)
        thread.start()
        # The second insert waits on the unique key index until the first transaction ends.
        waiting = (
            "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()"
        )
        wait_for(conn, waiting, 1, "the second enqueue to wait on the key")
        first.commit()
        thread.join(10)
    assert result == [first_id]
    assert _count(conn) == 1


def test_enqueue_from_an_async_connection(database_url: str, conn: psycopg.Connection[Any]) -> None:
    async def go() -> tuple[int, int]:
        aconn = await psycopg.AsyncConnection.connect(database_url)
        async with aconn:
            async with aconn.transaction():
                a = await crontick.enqueue(aconn, "t_core.ok", {"async": True}, key="a1")
                b = await crontick.enqueue(aconn, "t_core.ok", {"async": True}, key="a1")
            async with aconn.transaction():
                await crontick.enqueue(aconn, "t_core.ok", {"rolled": "back"})
                raise psycopg.Rollback()
        return a, b

    a, b = asyncio.run(go())
    assert a == b
    assert _count(conn) == 1
    assert job_row(conn, a)["payload"] == {"async": True}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"run_after": datetime(2030, 1, 1)}, "expected a timezone-aware run_after"),
        ({"max_attempts": 0}, "expected max_attempts >= 1, got: 0"),
    ],
)
def test_bad_enqueue_arguments_are_refused(conn: psycopg.Connection[Any], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(CrontickError, match=message):
        crontick.enqueue(conn, "t_core.ok", {}, **kwargs)
    assert _count(conn) == 0


def test_empty_type_is_refused(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(CrontickError, match="expected a non-empty job type, got: ''"):
        crontick.enqueue(conn, "", {})


def test_enqueue_many_returns_ids_in_order(conn: psycopg.Connection[Any]) -> None:
    ids = crontick.enqueue_many(conn, [("t_core.ok", {"n": n}) for n in range(5)])
    payloads = [job_row(conn, i)["payload"]["n"] for i in ids]
    assert payloads == [0, 1, 2, 3, 4]
    assert crontick.enqueue_many(conn, []) == []
