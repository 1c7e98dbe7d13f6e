"""The host app's own job handler for tests/app/test_existing_app.py: each run adds a row to the app's own table."""

from __future__ import annotations

import os
from typing import Any

import psycopg

import crontick


@crontick.handler("app.note_run")
def note_run(payload: Any, job: crontick.Job) -> None:
    """Not idempotent on purpose: a job run twice shows as two rows in public.job_runs (the app's table)."""
    with psycopg.connect(os.environ["EXISTING_APP_DATABASE_URL"], autocommit=True) as conn:
        conn.execute(
            "insert into public.job_runs (job_id, via) values (%(id)s, %(via)s)", {"id": job.id, "via": payload["via"]}
        )
