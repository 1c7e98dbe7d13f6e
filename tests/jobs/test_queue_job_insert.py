"""crontick_job_insert_many (sql/functions/job_insert_many.sql) is the one statement that inserts jobs: no other statement
in sql/ or lib/ does, every enqueue path runs it, and its defaults are the table's."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

import crontick
from crontick import db
from crontick.db import query

SQL = Path(str(db.sql_dir())).resolve()
LIB = Path(crontick.__file__).resolve().parent
THE_FUNCTION = SQL / "functions" / "job_insert_many.sql"
# A statement that adds rows to jobs, however its name is qualified or quoted.
INSERTS_JOBS = re.compile(
    r"\b(?:insert\s+into|merge\s+into|copy)\s+(?:only\s+)?(?:(?:\{schema\}|\"?\w+\"?)\s*\.\s*)?\"?jobs\"?(?![\w.])",
    re.I,
)
SQL_COMMENT = re.compile(r"--.*$", re.MULTILINE)
CALL = "select i from crontick.crontick_job_insert_many({}) i"


def _inserts(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".sql":
        text = SQL_COMMENT.sub("", text)
    return [f"{path}: {m.group(0)!r}" for m in INSERTS_JOBS.finditer(text)]


def test_no_statement_but_crontick_job_insert_many_inserts_into_jobs() -> None:
    files = [p for p in sorted(SQL.rglob("*.sql")) if p != THE_FUNCTION]
    files += [p for p in sorted(LIB.rglob("*.py")) if SQL not in p.resolve().parents]
    assert len(files) > 100
    assert [hit for path in files for hit in _inserts(path)] == []
    assert len(_inserts(THE_FUNCTION)) == 3  # rows without a key or debounce; with keys; a debounce's upsert


def test_the_three_inserts_of_the_function_are_the_same_up_to_their_on_conflict() -> None:
    text = SQL_COMMENT.sub("", THE_FUNCTION.read_text(encoding="utf-8"))
    bodies = [
        " ".join(m.split())
        for m in re.findall(r"insert into .*?debounce_until, start_by, traceparent, n\)", text, re.DOTALL)
    ]
    assert len(bodies) == 3 and len(set(bodies)) == 1
    assert "coalesce(r.max_attempts, _default_max_attempts)" in bodies[0]
    assert len(re.findall(r"_default_max_attempts constant integer := (\d+);", text)) == 1


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("insert into {schema}.jobs (type) values ('x')", True),
        ('INSERT INTO "crontick"."jobs" (type)', True),
        ("insert into jobs as j (type)", True),
        ("copy crontick.jobs from stdin", True),
        ("insert into {schema}.job_attempts (job_id)", False),
        ("insert into {schema}.crontick_jobs_x (a)", False),
        ("update {schema}.jobs set type = 'x'", False),
    ],
)
def test_the_check_finds_an_insert_into_jobs(text: str, found: bool) -> None:
    assert bool(INSERTS_JOBS.search(text)) is found


def _ids(conn: psycopg.Connection[Any], arguments: str, params: dict[str, Any] | None = None) -> list[int]:
    return [r[0] for r in conn.execute(CALL.format(arguments), params or {}).fetchall()]


def _row(conn: psycopg.Connection[Any], job_id: int) -> dict[str, Any]:
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    row = cur.execute("select * from crontick.jobs where id = %s", [job_id]).fetchone()
    assert row is not None
    return row


def test_a_null_takes_the_default_and_max_attempts_default_is_the_columns(conn: psycopg.Connection[Any]) -> None:
    column_default = conn.execute(
        "select pg_get_expr(d.adbin, d.adrelid) from pg_attrdef d join pg_attribute a"
        " on a.attrelid = d.adrelid and a.attnum = d.adnum"
        " where d.adrelid = 'crontick.jobs'::regclass and a.attname = 'max_attempts'"
    ).fetchone()
    assert column_default == ("4",)
    plain, given = _ids(
        conn, "array['t_ins.a', 't_ins.b'], _max_attempts => array[null, 7], _priorities => array[null, -3]"
    )
    row = _row(conn, plain)
    assert (row["payload"], row["max_attempts"], row["priority"], row["status"]) == ({}, 4, 0, "pending")
    assert row["run_after"] == row["created_at"]  # now, the statement's clock
    assert (row["key"], row["group_key"], row["schedule"], row["scheduled_for"], row["debounce_key"]) == (None,) * 5
    assert (_row(conn, given)["max_attempts"], _row(conn, given)["priority"]) == (7, -3)
    # An app's own INSERT gets the column's default; the function gives the same.
    conn.execute("insert into crontick.jobs (type, payload) values ('t_ins.own', '{}')")
    assert conn.execute("select max_attempts from crontick.jobs where type = 't_ins.own'").fetchone() == (4,)


def test_rows_are_inserted_in_array_order_with_their_own_columns(conn: psycopg.Connection[Any]) -> None:
    later = conn.execute("select now() + interval '1 hour'").fetchone()[0]  # type: ignore[index]
    ids = _ids(
        conn,
        "%(types)s, %(payloads)s, _run_after => %(run_after)s, _group_keys => %(groups)s,"
        " _scheduled_for => %(run_after)s, _schedules => %(schedules)s",
        {
            "types": ["t_ins.c", "t_ins.d", "t_ins.e"],
            "payloads": [Jsonb({"i": 1}), Jsonb({"i": 2}), None],
            "run_after": [later, None, later + timedelta(minutes=1)],
            "groups": ["g", None, "g"],
            "schedules": [None, "nightly", None],
        },
    )
    assert ids == sorted(ids) and len(ids) == 3
    rows = [_row(conn, i) for i in ids]
    assert [r["type"] for r in rows] == ["t_ins.c", "t_ins.d", "t_ins.e"]
    assert [r["payload"] for r in rows] == [{"i": 1}, {"i": 2}, {}]
    assert [r["run_after"] for r in rows] == [later, rows[1]["created_at"], later + timedelta(minutes=1)]
    assert [r["group_key"] for r in rows] == ["g", None, "g"]
    assert [r["schedule"] for r in rows] == [None, "nightly", None]
    assert _ids(conn, "null::text[]") == []


def test_a_drawn_id_is_kept(conn: psycopg.Connection[Any]) -> None:
    drawn = conn.execute("select nextval(pg_get_serial_sequence('crontick.jobs', 'id'))").fetchone()[0]  # type: ignore[index]
    assert _ids(conn, "array['t_ins.f', 't_ins.g'], _ids => %(ids)s", {"ids": [drawn, None]})[0] == drawn
    assert _row(conn, drawn)["type"] == "t_ins.f"


def test_a_key_an_active_job_holds_inserts_nothing_and_the_other_rows_go_in(conn: psycopg.Connection[Any]) -> None:
    (held,) = _ids(conn, "array['t_ins.h'], _keys => array['k1']")
    ids = _ids(conn, "array['t_ins.h', 't_ins.h'], _keys => array['k1', 'k2']")
    assert len(ids) == 1 and _row(conn, ids[0])["key"] == "k2"
    assert conn.execute("select count(*) from crontick.jobs where key = 'k1'").fetchone() == (1,)
    conn.execute("update crontick.jobs set status = 'done' where id = %s", [held])
    (again,) = _ids(conn, "array['t_ins.h'], _keys => array['k1']")
    assert again != held


def test_a_debounce_merges_into_the_open_job_and_returns_its_id(conn: psycopg.Connection[Any]) -> None:
    args = (
        "array['t_ins.d'], array[%(payload)s::jsonb], _run_after => array[now() + %(wait)s::interval],"
        " _debounce_keys => array['conv:1'], _debounce_until => array[now() + interval '60 seconds'], _priorities => %(p)s"
    )
    (first,) = _ids(conn, args, {"payload": Jsonb({"n": 1}), "wait": "10 seconds", "p": [5]})
    (merged,) = _ids(conn, args, {"payload": Jsonb({"n": 2}), "wait": "90 seconds", "p": [9]})
    assert merged == first
    row = _row(conn, first)
    assert (row["payload"], row["payloads"], row["priority"]) == ({"n": 2}, [{"n": 1}, {"n": 2}], 5)
    assert row["run_after"] == row["debounce_until"]  # moved, but never past debounce_until
    conn.execute(
        "update crontick.jobs set status = 'running', started_at = now(), locked_until = now() where id = %s", [first]
    )
    (fresh,) = _ids(conn, args, {"payload": Jsonb({"n": 3}), "wait": "10 seconds", "p": [None]})
    assert fresh != first and _row(conn, fresh)["payloads"] is None


def _calls(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "select coalesce(sum(calls), 0) from pg_stat_xact_user_functions where funcname = 'crontick_job_insert_many'"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_every_enqueue_path_runs_the_function(conn: psycopg.Connection[Any]) -> None:
    conn.execute("set track_functions = 'all'")
    hook = {"hook": "h", "event_id": "e1", "body_sha256": None, "received_at": None, "type": "t_ins.hook"}
    paths = {
        "crontick.enqueue": lambda: crontick.enqueue(conn, "t_ins.p", {}),
        "crontick.enqueue(key=)": lambda: crontick.enqueue(conn, "t_ins.p", {}, key="once"),
        "crontick.enqueue(debounce=)": lambda: crontick.enqueue(
            conn, "t_ins.p", {}, debounce=crontick.Debounce("d", 5)
        ),
        "enqueue_many": lambda: crontick.enqueue_many(conn, [("t_ins.p", {}), ("t_ins.q", {})]),
        "SQL crontick.enqueue": lambda: conn.execute("select crontick.enqueue('t_ins.sql')"),
        "inbound_event_record": lambda: conn.execute(
            query("inbound_event_record"),
            {
                **hook,
                "payload": Jsonb({}),
                "priority": 0,
                "max_attempts": None,
                "received_at": "now",
                "traceparent": None,
                "start_by_seconds": None,
            },
        ),
        "admin_schedule_enqueue": lambda: conn.execute(
            query("admin_schedule_enqueue"),
            {"name": "nightly", "job_type": "t_ins.s", "payload": Jsonb({}), "max_attempts": None},
        ),
    }
    for name, path in paths.items():
        with conn.transaction():
            before = conn.execute("select count(*) from crontick.jobs").fetchone()
            path()
            assert _calls(conn) >= 1, name
            assert conn.execute("select count(*) from crontick.jobs").fetchone() != before, name
