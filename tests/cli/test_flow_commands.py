"""`crontick pause|resume type|group|rate-limit NAME` and `crontick groups` as a user runs them: audited pauses
that the claim honours, one-line errors."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from tests.support.run_cli import cli_env
from tests.support.run_cli import crontick as run_crontick


def test_pause_a_group_list_it_as_paused_and_resume_it(database_url: str, conn: psycopg.Connection[Any]) -> None:
    env = cli_env(database_url)
    conn.execute("insert into jobs (type, payload, group_key) values ('t_cliflow.x', '{}', 'conv:9')")
    paused = run_crontick("pause", "group", "conv:9", "--json", env=env)
    assert paused.returncode == 0, paused.stderr
    assert json.loads(paused.stdout)["paused"] is True
    again = run_crontick("pause", "group", "conv:9", env=env)
    assert again.returncode == 1 and again.stderr.startswith("crontick: error: pause: expected group")
    listed = run_crontick("groups", "--json", env=env)
    assert [(g["group_key"], g["reason"]) for g in json.loads(listed.stdout)["groups"]] == [("conv:9", "paused")]
    assert "conv:9" in run_crontick("groups", env=env).stdout
    assert run_crontick("resume", "group", "conv:9", env=env).stdout == "group conv:9 is running again\n"
    assert conn.execute("select count(*) from crontick_pauses").fetchone() == (0,)
    audit = conn.execute("select role, action, detail from admin_audit order by id").fetchall()
    assert audit == [("cli", "pause_group", {"name": "conv:9"}), ("cli", "resume_group", {"name": "conv:9"})]
