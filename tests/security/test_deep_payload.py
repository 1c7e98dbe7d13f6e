"""A payload nested deeper than Python's json module can decode fails its own job, never the batch."""

from __future__ import annotations

from typing import Any

import psycopg

from tests.support.core_jobs import (
    db_now,
    ran_fixture,  # noqa: F401 (provides the `ran` fixture)
    tick,
)

DEPTH = 5000  # jsonb takes it; Python's json.loads raises RecursionError


def test_a_too_deep_payload_fails_alone(database_url: str, conn: psycopg.Connection[Any], ran: list[int]) -> None:
    deep = '{"d": ' * DEPTH + "{}" + "}" * DEPTH
    deep_id = conn.execute(
        "insert into jobs (type, payload) values ('t_core.ok', %s::jsonb) returning id", (deep,)
    ).fetchone()[0]  # type: ignore[index]
    good = [
        conn.execute("insert into jobs (type, payload) values ('t_core.ok', '{}') returning id").fetchone()[0]  # type: ignore[index]
        for _ in range(3)
    ]
    result = tick(database_url, now=db_now(conn))
    assert (result.jobs.succeeded, result.jobs.failed) == (3, 1)
    assert sorted(ran) == sorted(good)
    status, attempts, last_error = conn.execute(
        "select status, attempts, last_error from jobs where id = %s", (deep_id,)
    ).fetchone()  # type: ignore[misc]
    assert (status, attempts) == ("failed", 1)
    assert "nested deeper than" in last_error and f"job {deep_id} (t_core.ok)" in last_error
