"""`crontick schedules` through the installed script: enqueue a slot now, pause and resume, audited as the CLI's
(tests/schedules/test_listing_cli.py: the window, the listing and their errors)."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from tests.support.run_cli import cli_env, crontick, crontick_many

HANDLERS = "tests.support.cli_schedules"


def test_enqueue_pause_and_resume_from_the_cli_are_audited_as_cli(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    env = cli_env(database_url, CRONTICK_HANDLERS=HANDLERS)
    enqueued, unknown = crontick_many(  # at once; the pause and resume below in order
        [["schedules", "enqueue", "nightly-report", "--json"], ["schedules", "pause", "no-such-schedule"]], env=env
    )
    paused, again, resumed = (
        crontick("schedules", verb, "nightly-report", env=env) for verb in ("pause",) * 2 + ("resume",)
    )
    assert enqueued.returncode == 0, enqueued.stderr
    job_id = json.loads(enqueued.stdout)["job_id"]
    row = conn.execute("select type, payload, schedule, scheduled_for from jobs where id = %(id)s", {"id": job_id})
    assert row.fetchone() == ("t_cli.report", {"kind": "daily"}, "nightly-report", None)
    assert paused.returncode == 0 and "is paused" in paused.stdout, paused.stderr
    assert again.returncode == 0 and resumed.returncode == 0 and "resumed" in resumed.stdout, resumed.stderr
    assert unknown.returncode == 1 and "no-such-schedule" in unknown.stderr and "Traceback" not in unknown.stderr
    audit = conn.execute("select role, action, rows from admin_audit order by id").fetchall()
    assert audit == [
        ("cli", "enqueue_schedule", 1),
        ("cli", "pause_schedule", 1),
        ("cli", "pause_schedule", 0),
        ("cli", "resume_schedule", 1),
    ]
    assert conn.execute("select count(*) from crontick_pauses").fetchone() == (0,)
