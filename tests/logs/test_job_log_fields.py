"""Every line logged while a job runs names the job (job_id, job_type, attempt): crontick's own lines, and the
host app's through logging with crontick.logs.JobFields. Read from the real stderr of `crontick serve`, ticked over HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx
import psycopg

import crontick
from tests.support.constants import TEST_SECRET
from tests.support.crontick_serve import served
from tests.support.servers import stop

HANDLERS = "tests.support.log_handlers"


def _tick(database_url: str, **extra: str) -> list[dict[str, Any]]:
    """One tick of a served app; every JSON line it wrote on stderr."""
    with served(database_url, CRON_SECRET=TEST_SECRET, CRONTICK_HANDLERS=HANDLERS, **extra) as (base, proc):
        answer = httpx.post(base + "/api/cron/tick", headers={"Authorization": f"Bearer {TEST_SECRET}"}, timeout=30)
        assert answer.status_code == 200, answer.text
        stop(proc)
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


def _enqueue_three(conn: psycopg.Connection[Any]) -> dict[int, tuple[int, str]]:
    jobs = {}
    for n, job_type in enumerate(["t_log.async_job", "t_log.sync_job", "t_log.sync_job"]):
        jobs[n] = (crontick.enqueue(conn, job_type, {"n": n, "fail": n == 2}), job_type)
    return jobs


def test_crontick_lines_written_while_a_job_runs_carry_its_id_type_and_attempt(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    jobs = _enqueue_three(conn)
    lines = _tick(database_url)
    notes = [line for line in lines if line["event"] == "t_log_note"]
    assert sorted((n["n"], n["job_id"], n["job_type"], n["attempt"]) for n in notes) == [
        (n, job_id, job_type, 1) for n, (job_id, job_type) in sorted(jobs.items())
    ]
    tick_line = next(line for line in lines if line["event"] == "tick")
    assert "job_id" not in tick_line and "attempt" not in tick_line  # written after the jobs ran
    assert tick_line["jobs"]["succeeded"] == 2


def test_the_attempt_counts_up_on_a_retry(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = crontick.enqueue(conn, "t_log.sync_job", {"n": 7, "fail": True})
    _tick(database_url)
    conn.execute("update jobs set run_after = now() - interval '1 second' where id = %(id)s", {"id": job_id})
    notes = [line for line in _tick(database_url) if line["event"] == "t_log_note"]
    assert [(n["job_id"], n["attempt"]) for n in notes] == [(job_id, 2)]


def test_the_host_apps_own_lines_carry_the_job_through_the_jobfields_filter(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    jobs = _enqueue_three(conn)
    records = _tick(database_url, T_LOG_HOST_LOGGING="1")
    app_lines = [r for r in records if r.get("logger") == "app.jobs"]
    assert len(app_lines) == 4  # the async handler logs twice: on the loop and in a thread it started
    for record in app_lines:
        n = int(record["message"].rsplit(" ", 1)[1])
        assert (record["job_id"], record["job_type"], record["attempt"]) == (*jobs[n], 1), record
        assert record["trace_id"] is None  # no tracing configured
    # crontick's own line reached the host's handler too; outside a job, the filter's fields are None.
    tick_record = next(r for r in records if r.get("logger") == "crontick" and '"event": "tick"' in r["message"])
    assert tick_record["job_id"] is None
