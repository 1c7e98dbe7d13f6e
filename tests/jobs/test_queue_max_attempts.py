"""Attempts per type: a handler's `max_attempts=` is what its jobs get when their enqueue names none (enqueue,
enqueue_many, debounce); a job's own wins; the SQL crontick.enqueue, which cannot see Python's registry, gives 4.
And enqueue_many's per-job keys, deduplicated as enqueue's."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import ConfigError, CrontickError
from tests.support.core_jobs import job_row, tick

failures: list[int] = []


@crontick.handler("t_maxatt.thrice", max_attempts=3, retry=crontick.Retry(delays_seconds=(0,)))
def thrice(payload: Any, job: crontick.Job) -> None:
    failures.append(job.id)
    raise RuntimeError("always")


@crontick.handler("t_maxatt.plain")
def plain(payload: Any, job: crontick.Job) -> None:
    pass


def _attempts(conn: psycopg.Connection[Any], job_id: int) -> int:
    return int(job_row(conn, job_id)["max_attempts"])


def test_a_handlers_max_attempts_is_the_default_and_a_jobs_own_wins_on_every_python_path(
    conn: psycopg.Connection[Any],
) -> None:
    assert _attempts(conn, crontick.enqueue(conn, "t_maxatt.thrice", {})) == 3
    assert _attempts(conn, crontick.enqueue(conn, "t_maxatt.thrice", {}, max_attempts=7)) == 7
    assert _attempts(conn, crontick.enqueue(conn, "t_maxatt.plain", {})) == 4
    debounced = crontick.enqueue(conn, "t_maxatt.thrice", {}, debounce=crontick.Debounce("d", 30))
    assert _attempts(conn, debounced) == 3
    ids = crontick.enqueue_many(conn, [("t_maxatt.thrice", {}), ("t_maxatt.plain", {})])
    assert [_attempts(conn, i) for i in ids] == [3, 4]
    ids = crontick.enqueue_many(conn, [("t_maxatt.thrice", {}), ("t_maxatt.plain", {})], max_attempts=2)
    assert [_attempts(conn, i) for i in ids] == [2, 2]
    # SQL cannot read Python's registry: the job's own, else the column's default.
    [(sql_id,)] = conn.execute("select crontick.enqueue('t_maxatt.thrice', '{}')").fetchall()
    assert _attempts(conn, sql_id) == 4


def test_a_job_of_a_type_with_max_attempts_3_fails_after_its_third_attempt(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    failures.clear()
    job_id = crontick.enqueue(conn, "t_maxatt.thrice", {})
    for _ in range(3):
        conn.execute("update jobs set run_after = now() where id = %(id)s and status = 'pending'", {"id": job_id})
        tick(database_url)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], failures) == ("failed", 3, [job_id] * 3)


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3", 2**31])
def test_a_handlers_max_attempts_out_of_range_is_a_config_error(bad: Any) -> None:
    with pytest.raises(ConfigError, match="expected max_attempts as an integer >= 1 or None"):
        crontick.handler("t_maxatt.bad", max_attempts=bad)


def test_enqueue_many_dedupes_each_jobs_key_as_enqueue_does_in_one_statement(conn: psycopg.Connection[Any]) -> None:
    held = crontick.enqueue(conn, "t_maxatt.plain", {"n": 0}, key="k0")
    ids = crontick.enqueue_many(
        conn,
        [
            ("t_maxatt.plain", {"n": 1}, "k0"),  # held by an active job: its id
            ("t_maxatt.plain", {"n": 2}, "k1"),
            ("t_maxatt.plain", {"n": 3}),  # no key
            ("t_maxatt.plain", {"n": 4}, "k1"),  # an earlier job of this list holds it
            ("t_maxatt.thrice", {"n": 5}, None),
        ],
    )
    assert ids[0] == held and ids[3] == ids[1]
    assert len(set(ids)) == 4 and ids[1] < ids[2] < ids[4]
    rows = conn.execute("select id, key, payload ->> 'n', max_attempts from jobs order by id").fetchall()
    assert rows == [(held, "k0", "0", 4), (ids[1], "k1", "2", 4), (ids[2], None, "3", 4), (ids[4], None, "5", 3)]
    # Once the holder has ended, the key is free again.
    conn.execute("update jobs set status = 'done' where id = %(id)s", {"id": held})
    [again] = crontick.enqueue_many(conn, [("t_maxatt.plain", {"n": 6}, "k0")])
    assert again not in ids


def test_enqueue_many_refuses_a_bad_key_or_row_before_any_statement(conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(CrontickError, match=r"enqueue_many: job 1 \('t_maxatt.plain'\): expected key without NUL"):
        crontick.enqueue_many(conn, [("t_maxatt.plain", {}, "a"), ("t_maxatt.plain", {}, "x\x00y")])
    with pytest.raises(CrontickError, match="expected \\(type, payload\\) or \\(type, payload, key\\) tuples"):
        crontick.enqueue_many(conn, [("t_maxatt.plain", {}, "a", "b")])  # type: ignore[list-item]
    assert conn.execute("select count(*) from jobs").fetchone() == (0,)
