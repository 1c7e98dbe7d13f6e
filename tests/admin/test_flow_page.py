"""The Groups page: groups that wait and why, pause and resume from a form, a group's pending jobs cancelled
after a confirmation; a job's page shows its group and priority."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.text import KEY_MAX_BYTES
from tests.support.admin_pages import csrf_of, running, settings_for, signed_in
from tests.support.keys import WIDEST_CHARS, key_of_bytes, widest_key


def test_groups_page_pauses_a_group_and_cancels_its_pending_jobs(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = [
        r[0]
        for r in conn.execute(
            "insert into jobs (type, payload, group_key, priority) select 't_pagesflow.x', '{}', 'conv:42', -5"
            " from generate_series(1, 3) order by 1 returning id"
        )
    ]
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        page = c.get("/admin/groups")
        assert page.status_code == 200 and "conv:42" in page.text and "s-due" in page.text
        token = csrf_of(page.text)
        paused = c.post("/admin/flow/pause", data={"csrf": token, "kind": "group", "name": "conv:42"})
        assert paused.status_code == 303
        assert conn.execute("select kind, name from crontick_pauses").fetchall() == [("group", "conv:42")]
        assert "s-paused" in c.get("/admin/groups").text
        data = c.get("/admin/groups.json").json()
        assert [(g["group_key"], g["reason"], g["waiting"]) for g in data["groups"]] == [("conv:42", "paused", 2)]

        ask = c.post("/admin/flow/cancel", data={"csrf": token, "kind": "group", "name": "conv:42"})
        assert ask.status_code == 200 and "Cancel the pending jobs of group conv:42?" in ask.text
        done = c.post("/admin/flow/cancel", data={"csrf": token, "kind": "group", "name": "conv:42", "confirm": "yes"})
        assert done.status_code == 303
        statuses = conn.execute("select status from jobs where id = any(%(i)s)", {"i": ids}).fetchall()
        assert statuses == [("cancelled",)] * 3
        job = c.get(f"/admin/jobs/{ids[1]}")
        assert "conv:42" in job.text and "<dt>Priority</dt><dd>-5</dd>" in job.text
        listed = c.get("/admin/jobs").text
        assert "group conv:42" in listed and "priority -5" in listed
    actions = [r[0] for r in conn.execute("select action from admin_audit order by id")]
    assert actions == ["sign_in", "pause_group", "cancel_group"]


def test_the_pause_form_takes_a_group_key_at_the_bound_and_refuses_a_longer_one(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    longest, too_long = widest_key(WIDEST_CHARS), key_of_bytes(KEY_MAX_BYTES + 1, seed=1)
    ascii_type = "t_pagesflow." + "x" * (KEY_MAX_BYTES - 12)  # 2,048 characters of ASCII: within the bound
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        token = csrf_of(c.get("/admin/groups").text)
        for kind, name in (("group", longest), ("type", ascii_type)):
            paused = c.post("/admin/flow/pause", data={"csrf": token, "kind": kind, "name": name})
            assert paused.status_code == 303
        pauses = [("group", longest), ("type", ascii_type)]
        assert conn.execute("select kind, name from crontick_pauses order by kind").fetchall() == pauses
        detail = "name: expected a name of at most 2,048 bytes (UTF-8), got 2049"
        for verb in ("resume", "cancel"):
            form = {"csrf": token, "kind": "group", "name": too_long}
            as_json = c.post(f"/admin/flow/{verb}", data=form, headers={"Accept": "application/json"})
            assert (as_json.status_code, as_json.json()) == (400, {"error": "bad_request", "detail": detail})
            page = c.post(f"/admin/flow/{verb}", data=form)
            assert page.status_code == 400 and detail in page.text
    assert conn.execute("select kind, name from crontick_pauses order by kind").fetchall() == pauses


def test_the_groups_page_pages_past_a_long_ascii_group_key_and_ignores_a_cursor_over_the_bound(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # 2,000 ASCII characters: within the byte bound, so a cursor the page may give.
    first, second = ("conv:" + letter * 1995 for letter in "ab")
    conn.execute(
        "insert into jobs (type, payload, group_key) select 't_pagesflow.x', '{}', g from unnest(%(g)s::text[]) g",
        {"g": [first, second]},
    )
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        after_first = c.get("/admin/groups", params={"cursor": first})
        assert after_first.status_code == 200
        assert f"<code>{second}</code>" in after_first.text and f"<code>{first}</code>" not in after_first.text
        # A cursor no page gave (over the bound) starts from the first group, as one with a NUL does.
        for cursor in (key_of_bytes(KEY_MAX_BYTES + 1), "a\x00b"):
            listed = c.get("/admin/groups", params={"cursor": cursor})
            assert listed.status_code == 200 and f"<code>{first}</code>" in listed.text
