"""schemathesis drives every documented admin route with generated requests: no 5xx, no answer outside the schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from tests.admin.api_support import API_ADMIN_SECRET, api_settings, insert_jobs
from tests.http.http_checks import LiveApp

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    insert_jobs(conn, 40)
    insert_jobs(conn, 20, status="pending", type="t_api.p")
    conn.execute(
        "insert into job_attempts (job_id, attempt, started_at, finished_at, outcome, error)"
        " select id, 1, now(), now(), 'failed', last_error from jobs where status = 'failed'"
    )
    conn.execute(
        "insert into crontick_ticks (started_at, finished_at, source, summary)"
        " select now() - g * interval '15 minutes', now() - g * interval '15 minutes' + interval '1 second', 'test',"
        ' \'{"jobs": {"succeeded": 3, "failed": 1}}\' from generate_series(1, 5) g'
    )
    booking = conn.execute(
        "insert into bookings (customer_name, starts_at) values ('Ada', now() + interval '2 hours') returning id"
    ).fetchone()[0]  # type: ignore[index]
    conn.execute(
        "insert into reminder_sends (booking_id, kind, channel, status, last_error)"
        " values (%(b)s, '24h', 'console', 'failed', 'boom')",
        {"b": booking},
    )
    with live_app(api_settings(database_url)) as base:
        run = subprocess.run(
            [
                str(Path(sys.executable).with_name("schemathesis")),
                "run",
                f"{base}/api/admin/openapi.json",
                "-H",
                f"Authorization: Bearer {API_ADMIN_SECRET}",
                "--checks",
                CHECKS,
                "--max-examples",
                "25",
                "--phases",
                "examples,coverage,fuzzing",
                "--seed",
                "7",
                "--no-color",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, "SCHEMATHESIS_HOOKS": ""},
        )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "passed" in run.stdout.lower()
