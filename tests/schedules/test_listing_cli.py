"""What `crontick schedules` shows through the installed script: the DST window as JSON, the listing of each
schedule's last and next slot, and its errors."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from tests.support.run_cli import cli_env, crontick, crontick_many

HANDLERS = "tests.support.cli_schedules"


def test_window_json_shows_a_dst_week_without_a_database() -> None:
    env = cli_env(None, CRONTICK_HANDLERS=HANDLERS, DATABASE_URL="postgresql://nobody@127.0.0.1:1/none")
    spring, fall = crontick_many(
        [
            ["schedules", "--from", "2026-03-28T23:00Z", "--until", "2026-03-29T02:00:00+00:00", "--json"],
            ["schedules", "--from", "2026-10-24T22:00:00Z", "--until", "2026-10-25T02:00:00Z", "--json"],
        ],
        env=env,
    )
    assert spring.returncode == 0, spring.stderr
    assert json.loads(spring.stdout) == {
        "half-hourly": [
            "2026-03-28T23:30:00Z",
            "2026-03-29T00:00:00Z",
            "2026-03-29T00:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-29T01:30:00Z",
            "2026-03-29T02:00:00Z",
        ],
        "nightly-report": ["2026-03-29T01:00:00Z"],  # 02:30 does not exist: 03:00 CEST
        "ny-morning": [],
    }
    assert fall.returncode == 0, fall.stderr
    found = json.loads(fall.stdout)
    assert found["nightly-report"] == ["2026-10-25T00:30:00Z"]  # 02:30 CEST only, not 02:30 CET
    assert found["half-hourly"][3:7] == [  # 02:00 and 02:30, in both passes
        "2026-10-25T00:00:00Z",
        "2026-10-25T00:30:00Z",
        "2026-10-25T01:00:00Z",
        "2026-10-25T01:30:00Z",
    ]


@pytest.mark.slow
def test_window_errors_are_one_clear_line() -> None:
    env = cli_env(None, CRONTICK_HANDLERS=HANDLERS)
    bad_iso, backwards, half, dates, no_db = crontick_many(
        [
            ["schedules", "--from", "29/03/2026", "--until", "2026-03-30", "--json"],
            ["schedules", "--from", "2026-03-30", "--until", "2026-03-29", "--json"],
            ["schedules", "--from", "2026-03-30"],
            ["schedules", "--from", "2026-03-28", "--until", "2026-03-30", "--json"],
            ["schedules", "--json"],
        ],
        env=env,
    )
    # Without DATABASE_URL the listing still shows each definition and its next slot.
    assert no_db.returncode == 0, no_db.stderr
    listed = json.loads(no_db.stdout)
    assert [(s["name"], s["seen_by_a_tick"], s["last_slot"]) for s in listed] == [
        ("half-hourly", False, None),
        ("nightly-report", False, None),
        ("ny-morning", False, None),
    ]
    assert listed[0]["next_slot"][13:] in (":00:00Z", ":30:00Z") and listed[1]["next_slot"][13:] == ":30:00Z"
    assert bad_iso.returncode == 2 and bad_iso.stdout == ""
    assert "argument --from: expected an ISO-8601 time such as 2026-03-28T00:00Z" in bad_iso.stderr
    assert "'29/03/2026'" in bad_iso.stderr and "Traceback" not in bad_iso.stderr
    assert backwards.returncode == 1
    assert backwards.stderr == (
        "crontick: error: schedules: expected --until after --from, got 2026-03-30T00:00:00Z .. 2026-03-29T00:00:00Z\n"
    )
    assert half.returncode == 1 and "expected both --from and --until" in half.stderr
    # A date alone is midnight UTC.
    assert dates.returncode == 0 and json.loads(dates.stdout)["nightly-report"] == [
        "2026-03-28T01:30:00Z",
        "2026-03-29T01:00:00Z",
    ]
    env_broken = cli_env(None, CRONTICK_HANDLERS="tests.schedules.broken_schedule")
    bad = crontick("schedules", "--from", "2026-03-28", "--until", "2026-03-30", env=env_broken)
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith(
        "crontick: error: crontick.schedule('broken-digest'): expected a 5-field cron expression"
    )


@pytest.mark.slow
def test_listing_shows_last_and_next_slot_in_utc_and_local_time(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    env = cli_env(database_url, CRONTICK_HANDLERS=HANDLERS)
    before = crontick("schedules", "--json", env=env)
    assert before.returncode == 0, before.stderr
    listed = {s["name"]: s for s in json.loads(before.stdout)}
    assert set(listed) == {"nightly-report", "half-hourly", "ny-morning"}
    assert listed["nightly-report"]["last_slot"] is None and not listed["nightly-report"]["seen_by_a_tick"]
    assert listed["nightly-report"]["next_slot"].endswith(":30:00Z")
    assert listed["nightly-report"]["next_slot_local"].split()[1:] in (["02:30", "CET"], ["02:30", "CEST"])

    assert crontick("tick", env=env).returncode == 0
    conn.execute(
        "update crontick_schedules set evaluated_until = evaluated_until - interval '2 hours', next_at = '-infinity'"
        " where name = 'half-hourly'"
    )
    tick = crontick("tick", env=env)
    assert json.loads(tick.stdout)["schedules"]["enqueued"] == 4  # catch_up=all: every half hour of the 2 hours
    (last,) = conn.execute("select max(scheduled_for) from jobs where schedule = 'half-hourly'").fetchone()  # type: ignore[misc]

    after = crontick("schedules", "--json", env=env)
    half = {s["name"]: s for s in json.loads(after.stdout)}["half-hourly"]
    assert half["last_slot"] == last.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert half["seen_by_a_tick"] and [d["outcome"] for d in half["recent"]] == ["enqueued"] * 3

    text = crontick("schedules", env=env)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    i = lines.index(next(line for line in lines if line.startswith("half-hourly")))
    assert lines[i] == "half-hourly  '*/30 * * * *'  Europe/Amsterdam  catch_up=all  job=t_cli.poll"
    assert lines[i + 1].startswith(f"  last: {half['last_slot']}") and lines[i + 1].endswith(("CET", "CEST"))
    assert lines[i + 2].startswith(f"  next: {half['next_slot']}")
