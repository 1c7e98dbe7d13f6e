"""The admin's lists of one status: one range per job type, merged by id, from the indexes that hold no row
the tick's claim or group hand-over writes (migration 0023). Order and pages across types, the error search's window, and a
bulk chunk in which a job leaves its status while the chunk is being locked."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from crontick.admin.jobs import search, store
from crontick.admin.tx import decode_cursor
from tests.admin.store_support import GROUPED, MIXED, run

# Four types, interleaved by id, so that every page of a merged list takes rows from several ranges.


def ids(conn: psycopg.Connection[Any], where: str) -> list[int]:
    return [r[0] for r in conn.execute(f"select id from jobs where {where} order by id desc").fetchall()]  # noqa: S608


def pages(fetch: Any) -> list[int]:
    """Every id of a keyset list, page after page, by its cursor."""
    seen: list[int] = []
    before = None
    while True:
        rows, cursor = fetch(before)
        seen += [r["id"] for r in rows]
        if cursor is None:
            return seen
        before = decode_cursor(cursor)


# A group of five behind its running head (four held, in jobs_type_status_id), and a waiting job: rows each
# list reads from an index of its own (migration 0023).
STATUSES = ("failed", "done", "pending", "running", "waiting")


def test_a_status_list_merges_every_type_newest_first_across_pages(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(MIXED)
    conn.execute(GROUPED)
    assert conn.execute("select count(*) from jobs where held").fetchone() == (5,)
    for status in STATUSES:
        got = pages(lambda b, s=status: run(database_url, lambda c: store.list_jobs(c, status=s, before_id=b, limit=4)))
        assert got == ids(conn, f"status = '{status}'") and got, status
        for type in ("t_merge.0", "t_merge.3"):
            got = pages(
                lambda b, s=status, t=type: run(
                    database_url, lambda c: store.list_jobs(c, status=s, type=t, before_id=b, limit=4)
                )
            )
            assert got == ids(conn, f"status = '{status}' and type = '{type}'"), (status, type)
    for type in ("t_merge.0", "t_merge.1", "t_merge.9"):
        got = pages(lambda b, t=type: run(database_url, lambda c: store.list_jobs(c, type=t, before_id=b, limit=5)))
        assert got == ids(conn, f"type = '{type}'") and got, type
    due = pages(lambda b: run(database_url, lambda c: search.list_pending(c, split="due", before_id=b, limit=3)))
    later = pages(
        lambda b: run(database_url, lambda c: search.list_pending(c, split="scheduled", before_id=b, limit=3))
    )
    assert due == ids(conn, "status = 'pending' and run_after <= now()") and len(due) == 15 + 3
    assert later == ids(conn, "status = 'pending' and run_after > now()") and len(later) == 15 + 2
    for split, where in (("due", "run_after <= now()"), ("scheduled", "run_after > now()")):
        got = pages(
            lambda b, s=split: run(
                database_url, lambda c: search.list_pending(c, split=s, type="t_merge.1", before_id=b, limit=3)
            )
        )
        assert got == ids(conn, f"status = 'pending' and type = 't_merge.1' and {where}"), split


def test_the_error_search_windows_the_newest_failed_jobs_of_every_type(
    database_url: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    conn.execute(MIXED)
    monkeypatch.setattr(search, "ERROR_WINDOW_JOBS", 4)  # pages of windows: a window spans types, not rows of one
    got = pages(lambda b: run(database_url, lambda c: search.search_errors(c, "n=1", before_id=b, limit=2)))
    assert got == ids(conn, "status = 'failed' and last_error like '%n=1%'")
    assert len(got) == 3  # n = 12, 15 and 18: the failed ones (n divisible by 3) among n=1*


def test_the_jobs_table_has_no_full_index_for_the_admin(conn: psycopg.Connection[Any]) -> None:
    # Every claim, record and group hand-over adds an entry to each full index of jobs (they are not HOT
    # updates). Each one the admin wants costs the drain measurably (docs/benchmarks.md, "The admin's indexes").
    full = conn.execute(
        "select indexrelid::regclass::text from pg_index"
        " where indrelid = 'jobs'::regclass and indpred is null order by 1"
    ).fetchall()
    assert [r[0] for r in full] == ["jobs_pkey"]


def test_a_bulk_retry_leaves_alone_a_job_that_left_its_status_while_locked(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(MIXED)
    failed = sorted(ids(conn, "status = 'failed'"))  # 30, over four types
    top = max(failed)
    result: list[tuple[int, int, int | None]] = []
    with psycopg.connect(database_url) as other:
        other.execute("select 1 from jobs where id = %(id)s for update", {"id": failed[2]})

        def first_chunk() -> None:
            result.append(run(database_url, lambda c: store.bulk_retry(c, status="failed", max_id=top, chunk=5)))

        worker = threading.Thread(target=first_chunk)
        worker.start()
        deadline = time.monotonic() + 10
        while not conn.execute(
            "select exists (select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database())"
        ).fetchone()[0]:  # type: ignore[index]
            assert time.monotonic() < deadline, "the bulk retry never waited for the locked job"
            time.sleep(0.02)
        other.execute("update jobs set status = 'cancelled' where id = %(id)s", {"id": failed[2]})
        other.commit()
        worker.join(10)
    [(retried, skipped, after)] = result
    assert after is not None
    total, skips = retried, [skipped]
    while after is not None:
        more, skipped, after = run(
            database_url, lambda c, a=after: store.bulk_retry(c, status="failed", max_id=top, after_id=a, chunk=5)
        )
        total, skips = total + more, [*skips, skipped]
    assert total == 29  # every other failed job, once
    assert set(skips) == {0}  # the cancelled job was never counted as "skipped for its key"
    assert ids(conn, "status = 'failed'") == [] and ids(conn, "status = 'cancelled'") == [failed[2]]
