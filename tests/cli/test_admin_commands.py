"""The CLI's admin commands (`crontick jobs`, `retry`, `cancel`, `stats`) through the installed script, against a
real database."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from crontick import enqueue_many
from tests.support.core_jobs import job_row
from tests.support.run_cli import assert_one_line_error, crontick, spawn


def test_jobs_lists_by_status(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    pending, failed = enqueue_many(conn, [("alpha", {}), ("beta", {})])
    conn.execute("update jobs set status = 'failed', last_error = 'ValueError: nope' where id = %(id)s", {"id": failed})
    only_failed = crontick("jobs", "--status", "failed", env=env)
    everything = crontick("jobs", env=env)
    assert only_failed.returncode == everything.returncode == 0
    rows = only_failed.stdout.splitlines()[1:]
    assert len(rows) == 1 and rows[0].split()[:3] == [str(failed), "beta", "failed"]
    assert "ValueError: nope" in rows[0]
    assert {line.split()[0] for line in everything.stdout.splitlines()[1:]} == {str(pending), str(failed)}


def test_retry_makes_a_failed_job_pending_again_keeping_its_attempts(
    env: dict[str, str], conn: psycopg.Connection[Any]
) -> None:
    [job_id] = enqueue_many(conn, [("beta", {})], max_attempts=1)
    conn.execute("update jobs set status = 'failed', attempts = 1 where id = %(id)s", {"id": job_id})
    result = crontick("retry", str(job_id), env=env)
    assert (result.returncode, result.stdout.strip()) == (0, f"job {job_id} is pending again (attempts 1 of 2)")
    row = job_row(conn, job_id)
    # The count is kept (history stays true) and one more attempt is granted.
    assert (row["status"], row["attempts"], row["max_attempts"]) == ("pending", 1, 2)
    again = crontick("retry", str(job_id), env=env)
    assert_one_line_error(again, f"expected a failed, done or cancelled job, got job {job_id} with status 'pending'")
    audit = conn.execute("select role, action, rows from admin_audit").fetchall()
    assert audit == [("cli", "retry_job", 1)]


@pytest.mark.slow
def test_cancel_stats_and_json(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    pending, done = enqueue_many(conn, [("alpha", {"n": 1}), ("beta", {"n": 2})])
    conn.execute("update jobs set status = 'done' where id = %(id)s", {"id": done})
    cancelled = crontick("cancel", str(pending), "--json", env=env)
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["status"] == "cancelled"
    refused = crontick("cancel", str(done), "--json", env=env)
    assert refused.returncode == 1 and json.loads(refused.stdout)["error"] == "conflict"
    stats = json.loads(crontick("stats", "--json", env=env).stdout)
    assert stats["jobs"] == {"pending": 0, "running": 0, "done": 1, "failed": 0, "cancelled": 1, "waiting": 0}
    assert stats["stale"] is True and stats["last_tick_at"] is None
    table = crontick("stats", env=env).stdout
    assert "cancelled" in table and "last tick: never (stale)" in table
    listed = json.loads(crontick("jobs", "--json", "--payload", '{"n": 2}', env=env).stdout)
    assert [j["id"] for j in listed["jobs"]] == [done] and listed["next_cursor"] is None
    page = json.loads(crontick("jobs", "--json", "--limit", "1", env=env).stdout)
    rest = json.loads(crontick("jobs", "--json", "--cursor", page["next_cursor"], env=env).stdout)
    assert [j["id"] for j in page["jobs"] + rest["jobs"]] == [done, pending]


def test_retry_unknown_id_is_a_clear_error(env: dict[str, str]) -> None:
    assert_one_line_error(
        crontick("retry", "999999", env=env), "expected an existing job id, got: 999999 (no such job)"
    )


def test_a_listing_piped_into_head_stops_quietly(env: dict[str, str], conn: psycopg.Connection[Any]) -> None:
    """`crontick jobs | head -1`: the reader leaves after one line; no BrokenPipe traceback on stderr."""
    # 500 rows of JSON with a 1 KB payload each: far more than a pipe buffer (64 KiB) holds, so the
    # command is still writing when the reader leaves.
    enqueue_many(conn, [("pipe", {"n": n, "pad": "x" * 1000}) for n in range(500)])
    proc = spawn("jobs", "--json", "--limit", "500", env=env)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1)  # the first byte: the command is running and writing
    proc.stdout.close()  # what `head -1` does once it has its line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""
