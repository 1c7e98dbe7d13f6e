"""search_path hijack (issue 33, finding 3): a role that may create in `public` plants functions and operators that
match crontick's calls better than pg_catalog's, and none of them ever runs as crontick's role, on an enqueue, a tick
(steps, sleep, wait and signal, debounce, groups, a rescue, reminders), `crontick.signal` in Python and in SQL, or the
admin's pages. Every function a fresh migrate leaves pins its search_path, and no statement the app sends calls a
built-in with arguments unqualified: a new function or statement cannot forget either."""

from __future__ import annotations

import asyncio
import itertools
import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

import crontick
from crontick import db
from crontick.db import schema as schemas
from crontick.db.migrate import script
from crontick.db.queries import load_queries
from crontick.hooks import kick
from crontick.runtime import Runtime
from crontick.schedules import registry
from tests.support import admin_pages
from tests.support.core_jobs import db_now, tick
from tests.support.databases import fresh_database

PINNED = "search_path=pg_catalog, pg_temp"

# Types whose values crontick's statements and functions pass around; a built-in that takes a polymorphic or "any"
# argument is shadowed once with each, and an operator on each pair pg_catalog has no exact operator for.
CONCRETE = ["text", "bigint", "integer", "smallint", "jsonb", "timestamptz", "interval", "boolean", "double precision"]
POLYMORPHIC = {"anyelement", "anynonarray", "anycompatible", "anycompatiblenonarray", '"any"'}
POLYMORPHIC_ARRAY = {"anyarray", "anycompatiblearray"}
# What a caller passes where pg_catalog declares the wider type (an int literal for a bigint, a small psycopg int).
NARROWER = {
    "bigint": ["integer"],
    "integer": ["smallint"],
    "double precision": ["integer", "numeric"],
    "numeric": ["integer"],
}
OPERATORS = {
    "%": None, "+": None, "-": None, "*": None, "/": None, "||": "text", "->": "jsonb", "->>": "text", "@>": "boolean",
    "=": "boolean", "<>": "boolean", "<": "boolean", "<=": "boolean", ">": "boolean", ">=": "boolean",
}  # fmt: skip
# Grammar that reads like a call but is not a function looked up by name.
SYNTAX = {"coalesce", "greatest", "least", "nullif", "extract", "position", "substring", "overlay", "trim", "normalize"}
# A call of a function by name: group 1 is `pg_catalog.` when it is qualified so; one qualified otherwise is not seen.
_CALL = re.compile(r'(?<![\w".])(pg_catalog\.)?([a-z_][a-z0-9_]*)\s*\(\s*([)*])?', re.IGNORECASE)


@crontick.handler("t_sp.plain")
async def plain(payload: Any, job: crontick.Job) -> None:
    pass


@crontick.handler("t_sp.flaky")
async def flaky(payload: Any, job: crontick.Job) -> None:
    if job.attempt == 1:
        raise RuntimeError("first attempt fails")


@crontick.handler("t_sp.flow")
async def flow(payload: Any, job: crontick.Job) -> None:
    await job.step("ask", lambda: "asked")
    await job.sleep("nap", 1)
    answer = await job.wait_for("answer", payload["key"], timeout_seconds=3600)
    await job.step("thank", lambda: answer)


def _crontick_sql(schema: str) -> list[str]:
    """Every statement the app sends and every function body, composed as they run."""
    functions = [schemas.compose_script(text, schema) for _, text in db.function_files()]
    return functions + [schemas.compose(text, schema) for text in load_queries().values()]


def _called(texts: list[str]) -> set[str]:
    return {m.group(2).lower() for text in texts for m in _CALL.finditer(text)} - SYNTAX


def _shadow_body(label: str) -> str:
    """A plpgsql body that leaves a mark no rollback takes back (a sequence), then fails whatever called it."""
    return (
        "begin perform pg_catalog.nextval('public.sp_canary'); "
        f"raise exception 'search_path hijack: the shadow {label} ran as %', current_user; end"
    )


def _create(conn: psycopg.Connection[Any], statement: sql.Composable) -> bool:
    try:
        with conn.transaction():
            conn.execute(statement)
        return True
    except psycopg.Error:  # a signature PostgreSQL will not take (a pseudo-type result): nothing to shadow
        return False


def _signatures(args: list[str], ret: str) -> Iterator[tuple[list[str], str]]:
    """The signatures that would match a call of (args) -> ret better than pg_catalog's or tie with it."""
    yield [a for a in args], ret
    for concrete in CONCRETE:

        def fit(t: str, c: str = concrete) -> str:
            return c if t in POLYMORPHIC else f"{c}[]" if t in POLYMORPHIC_ARRAY else t

        if any(a in POLYMORPHIC | POLYMORPHIC_ARRAY for a in args):
            yield [fit(a) for a in args], fit(ret)
    for i, a in enumerate(args):
        for narrower in NARROWER.get(a, []):
            yield [*args[:i], narrower, *args[i + 1 :]], ret


def _plant_functions(conn: psycopg.Connection[Any], names: set[str]) -> int:
    overloads = conn.execute(
        "select p.proname, p.proargtypes::pg_catalog.regtype[]::text[], p.prorettype::pg_catalog.regtype::text,"
        " p.proretset from pg_catalog.pg_proc p where p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace"
        " and p.prokind = 'f' and p.proname = any(%(names)s) and p.pronargs <= 4",
        {"names": sorted(names)},
    ).fetchall()
    planted: set[tuple[str, tuple[str, ...]]] = set()
    for name, args, ret, returns_set in overloads:
        for shadow_args, shadow_ret in _signatures(list(args), ret):
            if (name, tuple(shadow_args)) in planted or shadow_ret in POLYMORPHIC | POLYMORPHIC_ARRAY:
                continue
            label = f"{name}({', '.join(shadow_args)})"
            statement = sql.SQL("create function public.{}({}) returns {}{} language plpgsql as {}").format(
                sql.Identifier(name),
                sql.SQL(", ").join(sql.SQL(a) for a in shadow_args),
                sql.SQL("setof " if returns_set else ""),
                sql.SQL(shadow_ret),
                sql.Literal(_shadow_body(label)),
            )
            if _create(conn, statement):
                planted.add((name, tuple(shadow_args)))
    return len(planted)


def _plant_operators(conn: psycopg.Connection[Any]) -> int:
    exact = set(
        conn.execute(
            "select o.oprname, o.oprleft::pg_catalog.regtype::text, o.oprright::pg_catalog.regtype::text"
            " from pg_catalog.pg_operator o where o.oprnamespace = 'pg_catalog'::pg_catalog.regnamespace"
        ).fetchall()
    )
    planted = 0
    for (op, ret), (left, right) in itertools.product(OPERATORS.items(), itertools.product(CONCRETE, CONCRETE)):
        if (op, left, right) in exact:
            continue  # a tie: pg_catalog, searched first, keeps it
        fn = sql.Identifier(f"sp_op_{planted}")
        label = f"operator {op} ({left}, {right})"
        types = {"left": sql.SQL(left), "right": sql.SQL(right), "ret": sql.SQL(ret or left)}
        created = _create(
            conn,
            sql.SQL("create function public.{fn}({left}, {right}) returns {ret} language plpgsql as {body}").format(
                fn=fn, body=sql.Literal(_shadow_body(label)), **types
            ),
        ) and _create(
            conn,
            sql.SQL(
                "create operator public.{op} (leftarg = {left}, rightarg = {right}, function = public.{fn})"
            ).format(op=sql.SQL(op), fn=fn, **types),
        )
        planted += created
    return planted


@pytest.fixture
def intruder(admin_url: str, database_url: str) -> Iterator[str]:
    """A login-less role that may create in `public` (every role may, on PostgreSQL 14 and older), with its shadows
    of every built-in crontick calls, and of operators on the types crontick uses, planted there."""
    role = f"sp_intruder_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create role {}").format(sql.Identifier(role)))
    try:
        with psycopg.connect(database_url, autocommit=True) as conn:
            _plant(conn, role)
        yield role
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def _plant(conn: psycopg.Connection[Any], role: str) -> None:
    conn.execute(sql.SQL("grant create, usage on schema public to {}").format(sql.Identifier(role)))
    conn.execute(sql.SQL("set role {}").format(sql.Identifier(role)))
    conn.execute("create sequence public.sp_canary")
    conn.execute("grant usage, update on sequence public.sp_canary to public")
    names = _called(_crontick_sql(schemas.from_env()))
    assert {"hashtextextended", "now", "jsonb_build_object", "left", "to_jsonb"} <= names
    assert _plant_functions(conn, names) > 100
    assert _plant_operators(conn) > 500
    # The exact calls a generated shadow cannot guess: a variadic "any" call's argument list, a row type.
    exact = {
        "jsonb_build_object": ["text, bigint, text, text, text, integer, text, text",  # a rescued job's alert
                               "text, text, text, text, text, text, text, integer, text, text"],  # a reminder's alert
        "to_jsonb": ["record"],  # the reminder source's row
    }  # fmt: skip
    for name, signatures in exact.items():
        for args in signatures:
            body = sql.Literal(_shadow_body(f"{name}({args})"))
            create = "create function public.{}({}) returns jsonb language plpgsql as {}"
            assert _create(conn, sql.SQL(create).format(sql.Identifier(name), sql.SQL(args), body)), args
    conn.execute("reset role")


def _canary_calls(database_url: str) -> int:
    with psycopg.connect(database_url, options="-c search_path=pg_catalog") as conn:
        last, called = conn.execute("select last_value, is_called from public.sp_canary").fetchone()  # type: ignore[misc]
    return int(last) if called else 0


def _count(conn: psycopg.Connection[Any], query: str, **params: Any) -> int:
    return int(conn.execute(query, params).fetchone()[0])  # type: ignore[index]


def test_no_planted_function_or_operator_runs_as_crontick(database_url: str, intruder: str) -> None:
    # crontick's own role here is a superuser, as in the review's repro; the test's own statements name pg_catalog only.
    try:
        _run_everything(database_url)
    finally:
        registry.unregister("sp-every-minute")
    assert _canary_calls(database_url) == 0


def _run_everything(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True, options="-c search_path=pg_catalog") as mine:
        # Enqueue: the Python API (a key, a group, a debounce merge, a list) and the SQL API.
        app = psycopg.connect(database_url, autocommit=True)  # the session's search_path has `public` in it
        crontick.enqueue(app, "t_sp.plain", {"n": 1}, key="sp:1", group_key="g:1")
        crontick.enqueue(app, "t_sp.flaky", {}, max_attempts=2, priority=-1)
        for n in range(2):
            crontick.enqueue(app, "t_sp.plain", {"n": n}, debounce=crontick.Debounce("d:1", 0))
        crontick.enqueue_many(app, [("t_sp.plain", {"n": 2}), ("t_sp.plain", {"n": 3})])
        flow_id = crontick.enqueue(app, "t_sp.flow", {"key": "sp:answer"})
        app.execute("select crontick.enqueue('t_sp.plain', '{}'::jsonb, key => 'sp:sql', group_key => 'g:1')")
        # A job whose tick died (its lease ended): the next tick rescues it and raises its alert.
        lost = crontick.enqueue(app, "t_sp.plain", {}, max_attempts=1)
        mine.execute(
            "update crontick.jobs set status = 'running', attempts = 1, started_at = pg_catalog.now(),"
            " locked_until = pg_catalog.now() operator(pg_catalog.-) interval '1 minute' where id = %(id)s",
            {"id": lost},
        )
        # A booking 23 hours ahead: its 24h reminder is due.
        mine.execute(
            "insert into crontick.bookings (customer_name, email, phone, starts_at) values"
            " ('Ada', 'ada@example.com', '+15550100', pg_catalog.now() operator(pg_catalog.+) interval '23 hours')"
        )
        crontick.schedule("sp-every-minute", "* * * * *", "t_sp.plain")
        now = db_now(mine)
        first = tick(database_url, now=now)
        assert first.jobs.claimed >= 6, first
        assert first.reminders.sent == 1, first
        # The schedule's first tick synced it; a missed minute makes its next one enqueue.
        mine.execute(
            "update crontick.crontick_schedules set next_at = '-infinity',"
            " evaluated_until = evaluated_until operator(pg_catalog.-) interval '2 minutes'"
        )
        second = tick(database_url, now=now + timedelta(seconds=30))
        assert second.jobs.succeeded >= 1 and second.schedules.enqueued >= 1, second
        assert _count(mine, "select count(*) from crontick.job_steps where job_id = %(id)s", id=flow_id) == 3
        # Wake it from Python in a transaction (its kick waits for the commit, then ticks) and from SQL.
        with admin_pages.running(admin_pages.settings_for(database_url)) as base:
            kick.attach(Runtime(admin_pages.settings_for(database_url, kick="inline")))
            try:
                with app.transaction():
                    assert crontick.signal(app, "sp:answer", {"answer": "yes"}) == flow_id
                kick.wait_for_threads()
            finally:
                kick.attach(None)
            assert app.execute("select crontick.signal('sp:early', '{}'::jsonb)").fetchone() == (None,)
            # The admin's pages read every table crontick has.
            client = admin_pages.signed_in(base)
            for page in ("/admin", "/admin/jobs", f"/admin/jobs/{flow_id}", f"/admin/jobs/{lost}",
                         "/admin/jobs?status=done", "/admin/jobs?type=t_sp.plain", "/admin/reminders",
                         "/admin/ticks", "/admin/overview", "/admin/schedules", "/admin/groups", "/admin/hooks",
                         "/admin/alerts", "/admin/audit"):  # fmt: skip
                assert client.get(page).status_code == 200, page
            # An admin's action: retry the rescued job that failed, and cancel it again.
            for verb in ("retry", "cancel"):
                token = admin_pages.csrf_of(client.get(f"/admin/jobs/{lost}").text)
                done = client.post(f"/admin/jobs/{lost}/{verb}", data={"csrf": token, "confirm": "yes"})
                assert done.status_code == 303, (verb, done.text)
            client.close()
        status = mine.execute("select status from crontick.jobs where id = %(id)s", {"id": flow_id}).fetchone()
        assert status == ("done",)
        app.close()


def _fresh_functions(admin_url: str, schema: str) -> list[tuple[str, list[str] | None, str, bool]]:
    """(name, settings, 'public' when PUBLIC may execute it, security definer) of each function in `schema`."""
    with fresh_database(admin_url, "template0") as url:
        asyncio.run(db.migrate(url, schema))
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "select p.proname, p.proconfig,"
                " pg_catalog.has_function_privilege('public', p.oid, 'execute'), p.prosecdef"
                " from pg_catalog.pg_proc p where p.pronamespace = %(schema)s::pg_catalog.regnamespace",
                {"schema": schema},
            ).fetchall()
    return [(str(r[0]), r[1], "public" if r[2] else "", bool(r[3])) for r in rows]


@pytest.mark.parametrize("schema", ["crontick", "public"])
def test_every_function_a_fresh_migrate_leaves_pins_its_search_path_and_is_not_public(
    admin_url: str, schema: str
) -> None:
    found = _fresh_functions(admin_url, schema)
    assert len(found) >= 20
    unpinned = [name for name, config, _, _ in found if PINNED not in (config or [])]
    assert unpinned == [], f"expected search_path pinned on every function (sql/function_rules.sql), got {unpinned}"
    executable = [name for name, _, public, _ in found if public]
    assert executable == [], f"expected no EXECUTE for PUBLIC, got it on {executable}"
    prefix = "crontick_" if schema == "public" else ""
    assert sorted(name for name, _, _, definer in found if definer) == [
        f"{prefix}cancel",
        f"{prefix}enqueue",
        f"{prefix}signal",
    ]


def test_no_statement_the_app_sends_calls_a_built_in_with_arguments_unqualified(database_url: str) -> None:
    """A call with arguments can be matched better by a function in a schema on the caller's search_path; a call with
    none (`now()`, `count(*)`) ties with pg_catalog's, which is searched first and wins the tie."""
    with psycopg.connect(database_url) as conn:
        built_in = {r[0] for r in conn.execute("select proname from pg_catalog.pg_proc where pronamespace = 11")}
    schema = schemas.from_env()
    unqualified = sorted(
        f"{name}: {m.group(0)}"
        for name, text in load_queries().items()
        for m in _CALL.finditer(schemas.compose(text, schema))
        if not m.group(1) and not m.group(3) and m.group(2).lower() in built_in - SYNTAX
    )
    assert unqualified == [], f"expected pg_catalog.<name>( for each built-in called with arguments, got {unqualified}"


def test_the_migration_script_pins_the_search_path_as_migrate_does() -> None:
    text = script("crontick")
    assert "set local search_path = pg_catalog, pg_temp;" in text.split("select pg_advisory_xact_lock")[0]
    assert text.count("alter function %s set search_path = pg_catalog, pg_temp") == 1


def test_no_statement_the_app_sends_gives_a_jsonb_operator_a_bare_literal() -> None:
    """`payload ->> 'key'` reads the literal as the other operand's type, so a planted `->>(jsonb, jsonb)` matches it
    exactly and wins over pg_catalog's `(jsonb, text)`: the literal is written `'key'::text`."""
    bare = re.compile(r"(->>?|#>>?)\s*'[^']*'(?!::)")
    found = sorted(f"{name}: {m.group(0)}" for name, text in load_queries().items() for m in bare.finditer(text))
    assert found == [], f"expected 'literal'::text after each jsonb operator, got {found}"
