"""Flow control at enqueue: group_key and priority (Python, SQL, psycopg2), and debounce merging a burst into one job."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from datetime import timedelta
from typing import Any

import psycopg
import pytest

import crontick
from crontick.errors import ConfigError, CrontickError
from crontick.text import KEY_MAX_BYTES
from crontick.tick.claim import claim_due
from tests.support.constants import PYTHONPATH, ROOT
from tests.support.core_jobs import db_now, job_row, tick, wait_for
from tests.support.keys import WIDEST_CHARS, key_of_bytes, widest_key

seen: list[tuple[int, Any, list[Any]]] = []


@crontick.handler("t_flowq.collect")
async def collect(payload: Any, job: crontick.Job) -> None:
    seen.append((job.id, payload, job.payloads))


@crontick.handler("t_flowq.urgent", priority=-7)
async def urgent(payload: Any, job: crontick.Job) -> None:
    pass


def _flow(conn: psycopg.Connection[Any], job_id: int) -> tuple[Any, ...]:
    row = job_row(conn, job_id)
    return row["group_key"], row["priority"]


def test_group_key_and_priority_are_stored_and_priority_defaults_to_the_handlers(conn: psycopg.Connection[Any]) -> None:
    assert _flow(conn, crontick.enqueue(conn, "t_flowq.collect", {}, group_key="conv:1", priority=3)) == ("conv:1", 3)
    assert _flow(conn, crontick.enqueue(conn, "t_flowq.collect", {})) == (None, 0)
    assert _flow(conn, crontick.enqueue(conn, "t_flowq.urgent", {})) == (None, -7)  # the handler's priority=
    assert _flow(conn, crontick.enqueue(conn, "t_flowq.urgent", {}, priority=0)) == (None, 0)  # given: used
    assert _flow(conn, crontick.enqueue(conn, "t_flowq.unknown_here", {})) == (None, 0)
    ids = crontick.enqueue_many(conn, [("t_flowq.urgent", {}), ("t_flowq.collect", {})], group_key="bulk")
    assert [_flow(conn, i) for i in ids] == [("bulk", -7), ("bulk", 0)]
    ids = crontick.enqueue_many(conn, [("t_flowq.urgent", {})], priority=5)
    assert [_flow(conn, i) for i in ids] == [(None, 5)]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"group_key": ""}, "expected group_key as a non-empty string or None, got: ''"),
        ({"group_key": 7}, "expected group_key as a non-empty string or None, got: 7"),
        ({"priority": 2**31}, "expected priority as a 32-bit integer or None, got: 2147483648"),
        ({"priority": True}, "expected priority as a 32-bit integer or None, got: True"),
        ({"debounce": ("k", 3)}, "expected debounce=crontick.Debounce(key, seconds, ...), got: ('k', 3)"),
        ({"debounce": crontick.Debounce("k", 1), "key": "x"}, "expected key or debounce, got both (key 'x')"),
    ],
)
def test_enqueue_refuses_bad_flow_options(
    conn: psycopg.Connection[Any], options: dict[str, Any], expected: str
) -> None:
    with pytest.raises(
        CrontickError, match="^enqueue\\('t_flowq.collect'\\): " + expected.replace("(", "\\(").replace(")", "\\)")
    ):
        crontick.enqueue(conn, "t_flowq.collect", {}, **options)
    assert conn.execute("select count(*) from jobs").fetchone() == (0,)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("", 3), "expected a non-empty key string, got: ''"),
        (("k", -1), "expected seconds between 0 and 2592000, got: -1"),
        (("k", float("nan")), "expected seconds between 0 and 2592000, got: nan"),
        (("k", 5, 4), "expected max_seconds None or between seconds (5) and 2592000, got: 4"),
        (("k", True), "expected seconds between 0 and 2592000, got: True"),
    ],
)
def test_debounce_is_checked_when_made(args: tuple[Any, ...], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        crontick.Debounce(*args)
    assert str(info.value) == "crontick.Debounce: " + expected


def test_the_sql_function_takes_named_arguments_from_psycopg2(database_url: str, conn: psycopg.Connection[Any]) -> None:
    import psycopg2

    p2 = psycopg2.connect(database_url)
    try:
        with p2, p2.cursor() as cur:
            cur.execute(
                "select crontick.enqueue('t_flowq.collect', %s::jsonb, group_key => %s, priority => %s)",
                ('{"n": 1}', "conv:9", -3),
            )
            plain = cur.fetchone()[0]
            ids = []
            for n in range(3):
                cur.execute(
                    "select crontick.enqueue('t_flowq.collect', %s::jsonb, debounce_key => 'reply:9', "
                    "debounce_seconds => 3, debounce_max_seconds => 20)",
                    (f'{{"n": {n}}}',),
                )
                ids.append(cur.fetchone()[0])
        with p2, p2.cursor() as cur, pytest.raises(psycopg2.errors.InvalidParameterValue) as info:
            cur.execute("select crontick.enqueue('t_flowq.collect', '{}', group_key => '')")
        assert "expected a non-empty group_key or null, got ''" in str(info.value)
        with p2, p2.cursor() as cur, pytest.raises(psycopg2.errors.InvalidParameterValue) as info:
            cur.execute("select crontick.enqueue('t_flowq.collect', '{}', debounce_key => 'k', debounce_seconds => -1)")
        assert "expected debounce_seconds between 0 and 2592000 (30 days), got -1" in str(info.value)
    finally:
        p2.close()
    assert _flow(conn, plain) == ("conv:9", -3)
    assert len(set(ids)) == 1
    row = job_row(conn, ids[0])
    assert (row["payload"], row["payloads"], row["debounce_key"]) == (
        {"n": 2},
        [{"n": 0}, {"n": 1}, {"n": 2}],
        "reply:9",
    )


def test_five_fast_enqueues_become_one_job_with_all_five_payloads(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    seen.clear()
    debounce = crontick.Debounce("reply:ada", 3, max_seconds=20)
    ids = [crontick.enqueue(conn, "t_flowq.collect", {"text": f"m{n}"}, debounce=debounce) for n in range(5)]
    other = crontick.enqueue(conn, "t_flowq.collect", {"text": "bob"}, debounce=crontick.Debounce("reply:bob", 3))
    assert len(set(ids)) == 1 and other != ids[0]
    row = job_row(conn, ids[0])
    now = db_now(conn) - timedelta(seconds=1)
    assert now + timedelta(seconds=2) <= row["run_after"] <= now + timedelta(seconds=4)
    assert row["debounce_until"] - row["created_at"] == timedelta(seconds=20)
    assert tick(database_url, now=now + timedelta(seconds=1)).jobs.claimed == 0  # the window is still open
    result = tick(database_url, now=now + timedelta(seconds=10))
    assert (result.jobs.claimed, result.jobs.succeeded) == (2, 2)
    by_id = {job_id: (payload, payloads) for job_id, payload, payloads in seen}
    assert by_id[ids[0]] == ({"text": "m4"}, [{"text": f"m{n}"} for n in range(5)])
    assert by_id[other] == ({"text": "bob"}, [{"text": "bob"}])  # merged nothing: [payload]


def test_debounce_never_moves_run_after_past_first_enqueue_plus_max_seconds(conn: psycopg.Connection[Any]) -> None:
    debounce = crontick.Debounce("reply:cap", 10, max_seconds=12)
    job_id = crontick.enqueue(conn, "t_flowq.collect", {"n": 0}, debounce=debounce)
    # As if the first message came 11 s ago: its cap is 1 s away, closer than now + 10 s.
    conn.execute("update jobs set debounce_until = now() + interval '1 second' where id = %s", (job_id,))
    assert crontick.enqueue(conn, "t_flowq.collect", {"n": 1}, debounce=debounce) == job_id
    row = job_row(conn, job_id)
    assert row["run_after"] == row["debounce_until"]
    # Without max_seconds each enqueue pushes it out again.
    free = crontick.Debounce("reply:free", 10)
    free_id = crontick.enqueue(conn, "t_flowq.collect", {}, debounce=free)
    conn.execute("update jobs set run_after = now() where id = %s", (free_id,))
    crontick.enqueue(conn, "t_flowq.collect", {}, debounce=free)
    row = job_row(conn, free_id)
    assert row["debounce_until"] is None and row["run_after"] >= db_now(conn) + timedelta(seconds=8)


def test_once_the_job_started_the_next_enqueue_starts_a_new_one(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    debounce = crontick.Debounce("reply:started", 0)
    first = crontick.enqueue(conn, "t_flowq.collect", {"n": 1}, debounce=debounce, group_key="conv:s")

    async def claim() -> list[int]:
        aconn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
        try:
            return [j.id for j in await claim_due(aconn, db_now(conn), 10, 60)]
        finally:
            await aconn.close()

    assert asyncio.run(claim()) == [first]  # running now
    second = crontick.enqueue(conn, "t_flowq.collect", {"n": 2}, debounce=debounce, group_key="conv:s")
    assert second != first
    # Handed back unstarted (the budget ran out before it began): it stays out of the merge, so no
    # later write of it can collide with the new job holding its key.
    conn.execute("update jobs set status = 'pending', attempts = 0 where id = %s", (first,))
    assert crontick.enqueue(conn, "t_flowq.collect", {"n": 3}, debounce=debounce) == second
    assert job_row(conn, second)["payloads"] == [{"n": 2}, {"n": 3}]
    assert job_row(conn, first)["payloads"] is None


def test_payloads_keep_the_newest_hundred(conn: psycopg.Connection[Any]) -> None:
    debounce = crontick.Debounce("reply:chatty", 5)
    ids = {crontick.enqueue(conn, "t_flowq.collect", {"n": n}, debounce=debounce) for n in range(105)}
    [job_id] = ids
    row = job_row(conn, job_id)
    assert row["payloads"] == [{"n": n} for n in range(5, 105)] and row["payload"] == {"n": 104}


ENQUEUE_ONE = """
import sys, psycopg, crontick
with psycopg.connect(sys.argv[1]) as conn:
    conn.execute("select pg_advisory_xact_lock_shared(42)")  # every process waits here, then all go at once
    job_id = crontick.enqueue(conn, "t_flowq.collect", {"n": int(sys.argv[2])}, debounce=crontick.Debounce("reply:race", 5))
print(job_id)
"""


def test_concurrent_processes_enqueueing_one_key_make_one_job(database_url: str, conn: psycopg.Connection[Any]) -> None:
    holder = psycopg.connect(database_url)
    holder.execute("select pg_advisory_xact_lock(42)")
    env = {"PYTHONPATH": PYTHONPATH}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ENQUEUE_ONE, database_url, str(n)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(5)
    ]
    try:
        wait_for(conn, "select count(*) from pg_locks where locktype = 'advisory' and not granted", 5, "5 waiting")
    finally:
        holder.rollback()  # releases them together
        holder.close()
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert len(set(outs)) == 1
    row = job_row(conn, int(outs[0]))
    assert sorted(p["n"] for p in row["payloads"]) == [0, 1, 2, 3, 4]
    assert conn.execute("select count(*) from jobs").fetchone() == (1,)


# -- keys' length: crontick.text.KEY_MAX_BYTES -------------------------------------------------------------------

BOUND = "of at most 2,048 bytes (UTF-8)"
# An idempotency key made from a URL: 2,000 ASCII characters, over the 512 characters keys were once held to.
URL_KEY = "https://example.com/hooks/callback?" + "".join(f"{n:x}" for n in range(2000))[:1965]


def test_keys_at_the_bound_fit_every_index_that_holds_them_and_one_byte_more_is_refused(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # 2,048 bytes of 4-byte characters that do not compress: the most a key within the bound can take. The grouped
    # jobs put the group key in jobs_group_active, each claim in jobs_group_running.
    key, group, reply = (widest_key(WIDEST_CHARS, seed=n) for n in range(3))
    assert {len(k.encode()) for k in (key, group, reply)} == {KEY_MAX_BYTES}
    keyed = crontick.enqueue(conn, "t_flowq.collect", {}, key=key, group_key=group)
    debounced = crontick.enqueue(conn, "t_flowq.collect", {}, group_key=group, debounce=crontick.Debounce(reply, 0))
    assert crontick.enqueue(conn, "t_flowq.collect", {}, debounce=crontick.Debounce(reply, 0)) == debounced  # merged
    [bulk] = crontick.enqueue_many(conn, [("t_flowq.collect", {})], group_key=group)
    rows = [job_row(conn, i) for i in (keyed, debounced, bulk)]
    assert [(r["key"], r["group_key"], r["debounce_key"]) for r in rows] == [
        (key, group, None),
        (None, group, reply),
        (None, group, None),
    ]
    for _ in rows:  # one at a time: they share a group
        assert tick(database_url, now=db_now(conn) + timedelta(seconds=1)).jobs.succeeded == 1
    for option in ({"key": key + "k"}, {"group_key": group + "g"}):
        with pytest.raises(CrontickError, match=re.escape(f"{BOUND}, got 2049") + "$"):
            crontick.enqueue(conn, "t_flowq.collect", {}, **option)
    with pytest.raises(ConfigError, match=re.escape(f"{BOUND}, got 2049") + "$"):
        crontick.Debounce(reply + "r", 0)


def test_a_long_ascii_key_that_fits_its_index_is_taken_by_python_and_sql(conn: psycopg.Connection[Any]) -> None:
    # The keys a 512-character bound refused: an upgrade must not break an app that enqueues them.
    assert len(URL_KEY) == len(URL_KEY.encode()) == 2000
    first = crontick.enqueue(conn, "t_flowq.collect", {}, key=URL_KEY, group_key=URL_KEY)
    assert crontick.enqueue(conn, "t_flowq.collect", {}, key=URL_KEY) == first  # jobs_key_active holds it
    debounced = crontick.enqueue(conn, "t_flowq.collect", {"n": 1}, debounce=crontick.Debounce(URL_KEY, 5))
    [bulk] = crontick.enqueue_many(conn, [("t_flowq.collect", {})], group_key=URL_KEY)
    keyed = "select crontick.enqueue('t_flowq.collect', key => %(k)s, group_key => %(k)s)"
    assert conn.execute(keyed, {"k": URL_KEY}).fetchone() == (first,)
    debounce = "select crontick.enqueue('t_flowq.collect', %(p)s, debounce_key => %(k)s, debounce_seconds => 5)"
    assert conn.execute(debounce, {"p": '{"n": 2}', "k": URL_KEY}).fetchone() == (debounced,)  # merged
    assert job_row(conn, debounced)["payloads"] == [{"n": 1}, {"n": 2}]
    rows = [job_row(conn, i) for i in (first, debounced, bulk)]
    assert [(r["key"], r["group_key"], r["debounce_key"]) for r in rows] == [
        (URL_KEY, URL_KEY, None),
        (None, None, URL_KEY),
        (None, URL_KEY, None),
    ]


@pytest.mark.parametrize("size", [KEY_MAX_BYTES + 1, 8000])
@pytest.mark.parametrize("option", ["key", "group_key"])
def test_a_longer_key_or_group_key_is_refused_before_any_sql(database_url: str, option: str, size: int) -> None:
    closed = psycopg.connect(database_url)
    closed.close()  # the check comes first: a statement on this connection would raise OperationalError
    with pytest.raises(CrontickError) as info:
        crontick.enqueue(closed, "t_flowq.collect", {}, **{option: key_of_bytes(size)})
    assert str(info.value) == f"enqueue('t_flowq.collect'): expected {option} {BOUND}, got {size}"
    with pytest.raises(CrontickError) as info:
        crontick.enqueue_many(closed, [("t_flowq.collect", {})], group_key=key_of_bytes(size))
    assert str(info.value) == f"enqueue_many: expected group_key {BOUND}, got {size}"


def test_a_longer_debounce_key_is_refused_when_the_debounce_is_made() -> None:
    with pytest.raises(ConfigError) as info:
        crontick.Debounce(key_of_bytes(8000), 3)
    assert str(info.value) == f"crontick.Debounce: expected a key {BOUND}, got 8000"


@pytest.mark.parametrize("argument", ["key", "group_key", "debounce_key"])
def test_the_sql_function_refuses_a_longer_key_and_takes_one_at_the_bound(
    conn: psycopg.Connection[Any], argument: str
) -> None:
    call = f"select crontick.enqueue('t_flowq.collect', '{{}}', {argument} => %(k)s, debounce_seconds => %(s)s)"
    seconds = 3 if argument == "debounce_key" else None
    for size in (KEY_MAX_BYTES + 1, 8000):
        with pytest.raises(psycopg.errors.StringDataRightTruncation) as info:
            conn.execute(call, {"k": key_of_bytes(size), "s": seconds})
        expected = f"crontick.enqueue('t_flowq.collect'): expected {argument} {BOUND}, got {size}"
        assert info.value.diag.message_primary == expected
    assert conn.execute("select count(*) from jobs").fetchone() == (0,)
    at_bound = widest_key(WIDEST_CHARS)
    [job_id] = conn.execute(call, {"k": at_bound, "s": seconds}).fetchone() or ()
    assert job_row(conn, job_id)[argument] == at_bound


def test_the_sql_function_names_the_first_key_over_the_bound(conn: psycopg.Connection[Any]) -> None:
    call = "select crontick.enqueue('t_flowq.collect', key => %s, group_key => %s, debounce_key => %s)"
    for sizes, named, size in (((1, 3000, 2049), "group_key", 3000), ((2100, 3000, 1), "key", 2100)):
        with pytest.raises(psycopg.errors.StringDataRightTruncation) as info:
            conn.execute(call, [key_of_bytes(n) for n in sizes])
        expected = f"crontick.enqueue('t_flowq.collect'): expected {named} {BOUND}, got {size}"
        assert info.value.diag.message_primary == expected
