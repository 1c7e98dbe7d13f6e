"""Flow control in the JSON admin API over real HTTP: pauses hold jobs back from real ticks, the groups
view says why each group waits, a group's pending jobs end in one call, every change is audited."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import quote

import httpx
import psycopg

import crontick
from crontick.text import KEY_MAX_BYTES
from tests.admin.api_support import ADMIN, VIEWER, api_settings
from tests.support.core_jobs import db_now, tick
from tests.support.http_checks import LiveApp
from tests.support.keys import WIDEST_CHARS, key_of_bytes, widest_key

crontick.rate_limit("t_apiflow.llm", 2, per_seconds=3600)


@crontick.handler("t_apiflow.reply", rate_limit="t_apiflow.llm")
def reply(payload: Any, job: crontick.Job) -> None:
    pass


@crontick.handler("t_apiflow.import")
def import_people(payload: Any, job: crontick.Job) -> None:
    pass


@crontick.handler("t_apiflow.export")
def export_people(payload: Any, job: crontick.Job) -> None:
    pass


def _insert(conn: psycopg.Connection[Any], type: str, group: str | None, n: int = 1) -> list[int]:
    rows = conn.execute(
        "insert into jobs (type, payload, group_key) select %(t)s, '{}', %(g)s from generate_series(1, %(n)s)"
        " order by 1 returning id",
        {"t": type, "g": group, "n": n},
    ).fetchall()
    return [r[0] for r in rows]


def _status(conn: psycopg.Connection[Any], ids: list[int]) -> list[str]:
    return [r[0] for r in conn.execute("select status from jobs where id = any(%(i)s) order by id", {"i": ids})]


def test_pausing_a_type_and_a_group_holds_their_jobs_pending_until_resumed(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    imports = _insert(conn, "t_apiflow.import", None, 3)
    grouped = _insert(conn, "t_apiflow.reply", "conv:1")
    other = _insert(conn, "t_apiflow.reply", "conv:2")
    settings = api_settings(database_url)
    with live_app(settings) as base, httpx.Client(base_url=base, headers=ADMIN) as http:
        r = http.post("/api/admin/types/t_apiflow.import/pause")
        assert r.status_code == 200 and r.json()["paused"] is True
        assert http.post("/api/admin/types/t_apiflow.import/pause").status_code == 409  # already paused
        assert http.post("/api/admin/groups/conv:1/pause").status_code == 200
        viewer = httpx.post(f"{base}/api/admin/groups/conv:2/pause", headers=VIEWER)
        assert viewer.status_code == 403  # read-only

        tick(database_url, settings, now=db_now(conn))
        assert _status(conn, imports + grouped) == ["pending"] * 4  # paused: not claimed, nothing spent
        assert _status(conn, other) == ["done"]
        # Due but held back by their pauses: the next tick claims nothing and answers more: false, so
        # a scheduler that calls again while `more` does not spin on them.
        again = tick(database_url, settings, now=db_now(conn))
        assert (again.jobs.claimed, again.more) == (0, False)
        ready = _insert(conn, "t_apiflow.export", None, 2)  # due jobs that no pause holds back, one per tick:
        one = replace(settings, batch_size=1)
        assert tick(database_url, one, now=db_now(conn)).more is True  # the second is still due behind the pauses
        assert tick(database_url, one, now=db_now(conn)).more is False
        assert _status(conn, ready) == ["done"] * 2
        assert conn.execute(
            "select sum(attempts) from jobs where id = any(%(i)s)", {"i": imports + grouped}
        ).fetchone() == (0,)

        groups = http.get("/api/admin/groups").json()["groups"]
        assert [(g["group_key"], g["reason"]) for g in groups] == [("conv:1", "paused")]
        pauses = {(p["kind"], p["name"]) for p in http.get("/api/admin/pauses").json()["pauses"]}
        assert pauses == {("type", "t_apiflow.import"), ("group", "conv:1")}

        assert http.post("/api/admin/types/t_apiflow.import/resume").status_code == 200
        assert http.post("/api/admin/groups/conv:1/resume").status_code == 200
        tick(database_url, settings, now=db_now(conn))
        assert _status(conn, imports + grouped) == ["done"] * 4
    audit = [r[0] for r in conn.execute("select action from admin_audit order by id")]
    assert audit == ["pause_type", "pause_group", "resume_type", "resume_group"]


def test_the_rate_limit_view_and_a_groups_bulk_cancel(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    settings = api_settings(database_url)
    first = _insert(conn, "t_apiflow.reply", None, 3)
    tick(database_url, settings)  # two start; the limit holds back the third
    assert _status(conn, first) == ["done", "done", "pending"]
    backlog = _insert(conn, "t_apiflow.import", "import:7", 5)
    with live_app(settings) as base, httpx.Client(base_url=base, headers=ADMIN) as http:
        (llm,) = [r for r in http.get("/api/admin/rate-limits").json()["rate_limits"] if r["name"] == "t_apiflow.llm"]
        assert (llm["count"], llm["used"], llm["exhausted"]) == (2, 2, True) and llm["reopens_at"]
        (group,) = http.get("/api/admin/groups").json()["groups"]
        assert (group["group_key"], group["reason"], group["waiting"], group["head"]["id"]) == (
            "import:7", "due", 4, backlog[0],
        )  # fmt: skip
        r = http.post("/api/admin/groups/import:7/cancel")
        assert r.status_code == 200 and r.json() == {"group_key": "import:7", "cancelled": 5, "more": False}
    assert _status(conn, backlog) == ["cancelled"] * 5
    assert conn.execute("select action, rows from admin_audit").fetchall() == [("cancel_group", 5)]


def test_a_group_whose_key_is_at_the_bound_pauses_and_a_longer_name_is_a_json_400(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # Any group an enqueue accepts can be paused, resumed and paged past (the key: 2,048 bytes, 4 to a character).
    longest, other = widest_key(WIDEST_CHARS), widest_key(WIDEST_CHARS, seed=2)
    grouped = crontick.enqueue(conn, "t_apiflow.export", {}, group_key=longest)
    _insert(conn, "t_apiflow.export", other)
    with live_app(api_settings(database_url)) as base, httpx.Client(base_url=base, headers=ADMIN) as http:
        ascii_name = "conv:" + "7" * (KEY_MAX_BYTES - 5)  # 2,048 characters: bytes are counted, not characters
        for name, verb in ((longest, "pause"), (longest, "resume"), (longest, "pause"), (ascii_name, "pause")):
            r = http.post(f"/api/admin/groups/{quote(name, safe='')}/{verb}")
            assert r.status_code == 200 and r.json()["name"] == name
        assert http.post(f"/api/admin/groups/{ascii_name}/resume").status_code == 200
        first = http.get("/api/admin/groups", params={"limit": 1}).json()
        rest = http.get("/api/admin/groups", params={"limit": 1, "cursor": first["next_cursor"]}).json()
        assert first["next_cursor"] in (longest, other)  # a cursor at the bound is taken back
        paged = {g["group_key"]: g["paused"] for g in first["groups"] + rest["groups"]}
        assert paged == {longest: True, other: False}
        for size in (KEY_MAX_BYTES + 1, 4000):
            too_long = quote(key_of_bytes(size, seed=1), safe="")
            for verb in ("pause", "resume", "cancel"):
                r = http.post(f"/api/admin/groups/{too_long}/{verb}")
                detail = f"group_key: expected a name of at most 2,048 bytes (UTF-8), got {size}"
                assert (r.status_code, r.json()) == (400, {"error": "bad_request", "detail": detail})
            r = http.get("/api/admin/groups", params={"cursor": key_of_bytes(size, seed=1)})
            detail = f"cursor: expected a name of at most 2,048 bytes (UTF-8), got {size}"
            assert (r.status_code, r.json()) == (400, {"error": "bad_request", "detail": detail})
    tick(database_url, api_settings(database_url), now=db_now(conn))
    assert _status(conn, [grouped]) == ["pending"]  # paused
    assert conn.execute("select kind, name from crontick_pauses").fetchall() == [("group", longest)]
