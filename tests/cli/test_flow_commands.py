"""`crontick pause|resume type|group|rate-limit NAME` and `crontick groups` as a user runs them: audited pauses
that the claim honours, one-line errors."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from tests.support.run_cli import cli_env, crontick_many
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


def test_pause_takes_a_name_up_to_the_key_bound_in_bytes_and_refuses_a_longer_one_in_one_line(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    env = cli_env(database_url)
    ascii_group = "conv:" + "9" * 2043  # 2,048 bytes: a group_key an enqueue accepts, so it can be paused
    paused, refused = crontick_many([["pause", "group", ascii_group], ["pause", "group", ascii_group + "€"]], env)
    assert paused.returncode == 0, paused.stderr
    assert conn.execute("select kind, name from crontick_pauses").fetchall() == [("group", ascii_group)]
    assert refused.returncode == 1 and refused.stderr == (
        "crontick: error: name: expected a name of at most 2,048 bytes (UTF-8), got 2051\n"
    )
