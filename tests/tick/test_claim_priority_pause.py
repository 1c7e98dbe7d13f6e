"""Priority and pauses in the claim: urgent jobs are claimed before a backlog, ties go by run_after then id,
and a paused type, group or rate limit keeps its jobs pending without holding back the others."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from crontick import db
from crontick.admin.jobs import store
from crontick.tick.claim import Claim, claim_batch
from tests.support.core_jobs import db_now


def _claim(url: str, now: datetime, limit: int, flow: dict[str, Any] | None = None) -> Claim:
    async def go() -> Claim:
        c = await db.connect(url)
        try:
            if flow is None:
                return await claim_batch(c, now, limit, 60)
            cur = await c.execute(
                db.query("job_claim_due"),
                {"now": now, "limit": limit, "lease": timedelta(seconds=60), "flow": Jsonb(flow)},
            )
            row = await cur.fetchone()
            assert row is not None
            return Claim([], row[1], row[2], row[3])._replace(jobs=row[0] or [])
        finally:
            await c.close()

    return asyncio.run(go())


def _ids(claim: Claim) -> list[int]:
    return [j.id if hasattr(j, "id") else j[0] for j in claim.jobs]


def test_urgent_jobs_are_claimed_before_a_backlog_ties_by_run_after_then_id(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(
        "insert into jobs (type, payload, run_after) select 't_prio.import', '{}', now() - interval '1 hour'"
        " from generate_series(1, 500)"
    )
    rows = conn.execute(
        "insert into jobs (type, payload, priority, run_after) values"
        " ('t_prio.reply', '{}', -10, now()), ('t_prio.reply', '{}', -10, now() - interval '1 minute'),"
        " ('t_prio.reply', '{}', -10, now() - interval '1 minute') returning id"
    ).fetchall()
    late, early1, early2 = (r[0] for r in rows)
    now = db_now(conn)
    # A batch comes back in id order; which jobs it holds shows the claim's order.
    assert _ids(_claim(database_url, now, 1)) == [early1]  # urgent first; of equal run_after, the smaller id
    assert _ids(_claim(database_url, now, 1)) == [early2]
    assert _ids(_claim(database_url, now, 1)) == [late]  # the urgent job due last, still before the backlog
    assert len(_claim(database_url, now, 10).jobs) == 10  # then the backlog


def test_a_paused_type_group_or_limit_waits_and_the_rest_is_claimed(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    ids = {}
    for name, group in (("t_pause.a", None), ("t_pause.b", "conv:1"), ("t_pause.c", None), ("t_pause.d", None)):
        row = conn.execute(
            "insert into jobs (type, payload, group_key) values (%(t)s, '{}', %(g)s) returning id",
            {"t": name, "g": group},
        ).fetchone()
        assert row is not None
        ids[name] = row[0]
    conn.execute(
        "insert into crontick_pauses (kind, name) values ('type', 't_pause.a'), ('group', 'conv:1'),"
        " ('rate_limit', 'llm')"
    )
    flow = {"limits": [{"name": "llm", "count": 100, "seconds": 60, "types": ["t_pause.c"]}]}
    claim = _claim(database_url, db_now(conn), 10, flow)
    assert _ids(claim) == [ids["t_pause.d"]]
    assert claim.throttled_until is None  # paused, not throttled: nothing reopens by itself
    assert conn.execute("select count(*) from jobs where status = 'pending' and attempts = 0").fetchone() == (3,)
    conn.execute("delete from crontick_pauses")
    assert sorted(_ids(_claim(database_url, db_now(conn), 10, flow))) == sorted(
        ids[t] for t in ("t_pause.a", "t_pause.b", "t_pause.c")
    )


def test_an_exhausted_limit_says_when_it_reopens_and_claims_nothing_more(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute("insert into jobs (type, payload) select 't_lim.x', '{}' from generate_series(1, 5)")
    flow = {"limits": [{"name": "x", "count": 2, "seconds": 30, "types": ["t_lim.x"]}]}
    now = db_now(conn)
    first = _claim(database_url, now, 10, flow)
    assert len(first.jobs) == 2 and first.throttled_until == now + timedelta(seconds=30)
    later = _claim(database_url, now + timedelta(seconds=10), 10, flow)
    assert later.jobs == [] and later.throttled_until == now + timedelta(seconds=30)
    # A deploy that raises the count: it counts from the next claim on.
    flow["limits"][0]["count"] = 3
    assert len(_claim(database_url, now + timedelta(seconds=11), 10, flow).jobs) == 1
    assert len(_claim(database_url, now + timedelta(seconds=31), 10, flow).jobs) == 2  # the window moved on


def test_group_concurrency_above_one_starts_up_to_n_of_a_group_never_more(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    conn.execute("insert into jobs (type, payload, group_key) select 't_wide.x', '{}', 'g' from generate_series(1, 6)")
    flow = {"limits": [], "wide": [{"type": "t_wide.x", "n": 3}]}
    now = db_now(conn)
    running = "select count(*) from jobs where status = 'running'"
    # The group had nothing running: its head and the next two start in one claim, not a claim apart.
    assert len(_claim(database_url, now, 10, flow).jobs) == 3
    assert _claim(database_url, now, 10, flow).jobs == [] and conn.execute(running).fetchone() == (3,)
    conn.execute("update jobs set status = 'done' where id = (select min(id) from jobs where status = 'running')")
    assert len(_claim(database_url, now, 10, flow).jobs) == 1
    assert conn.execute(running).fetchone() == (3,)
    # Without the declaration (another deploy), the group is one at a time again: nothing starts beside them.
    conn.execute("update jobs set status = 'done' where id = (select min(id) from jobs where status = 'running')")
    assert _claim(database_url, now, 10, None).jobs == []


def test_a_pending_limit_1_job_keeps_the_wide_jobs_after_it_from_starting_ahead_of_it(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """A wide job, then a limit-1 one, then wide ones: none of the later wide jobs starts before the limit-1 job has
    run, or wide jobs arriving one after another would keep it held for good."""
    conn.execute(
        "insert into jobs (type, payload, group_key) values ('t_wide.x', '{}', 'g'), ('t_bar.one', '{}', 'g'),"
        " ('t_wide.x', '{}', 'g'), ('t_wide.x', '{}', 'g')"
    )
    wide1, one, wide2, wide3 = (r[0] for r in conn.execute("select id from jobs order by id").fetchall())
    flow = {"limits": [], "wide": [{"type": "t_wide.x", "n": 3}]}
    now = db_now(conn)
    assert _ids(_claim(database_url, now, 10, flow)) == [wide1]  # was [wide1, wide2]: wide2 ranked 3 of 3
    assert _claim(database_url, now, 10, flow).jobs == []
    conn.execute("update jobs set status = 'done', locked_until = null where id = %s", (wide1,))
    assert _ids(_claim(database_url, now, 10, flow)) == [one]
    assert _claim(database_url, now, 10, flow).jobs == []  # a wide job waits for a running limit-1 one (docs)
    conn.execute("update jobs set status = 'done', locked_until = null where id = %s", (one,))
    assert _ids(_claim(database_url, now, 10, flow)) == [wide2, wide3]


def test_a_retried_job_behind_which_its_group_moved_on_waits_for_a_free_slot(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """An admin retries a failed job while the jobs after it run: the group still runs at most n at once."""
    conn.execute("insert into jobs (type, payload, group_key) select 't_wide.x', '{}', 'g' from generate_series(1, 3)")
    first, second, third = (r[0] for r in conn.execute("select id from jobs order by id").fetchall())
    flow = {"limits": [], "wide": [{"type": "t_wide.x", "n": 2}]}
    now = db_now(conn)
    running = "select array_agg(id order by id) from jobs where status = 'running'"
    assert len(_claim(database_url, now, 10, flow).jobs) == 2
    conn.execute("update jobs set status = 'failed', locked_until = null, finished_at = now() where id = %s", (first,))
    assert len(_claim(database_url, now, 10, flow).jobs) == 1 and conn.execute(running).fetchone() == ([second, third],)

    async def retry() -> bool:
        c = await db.connect(database_url)
        try:
            return (await store.retry_job(c, first, role="admin")).ok
        finally:
            await c.close()

    assert asyncio.run(retry())
    assert _claim(database_url, now, 10, flow).jobs == []  # was a third running job
    conn.execute("update jobs set status = 'done', locked_until = null where id = %s", (third,))
    assert [j[0] for j in _claim(database_url, now, 10, flow).jobs] == [first]  # a slot freed: it starts
    assert conn.execute(running).fetchone() == ([first, second],)


def _claim_pages(conn: psycopg.Connection[Any], now: datetime, flow: dict[str, Any] | None) -> tuple[list[int], int]:
    """(ids claimed, pages of jobs_pending_claim read) for one claim of 10, rolled back afterwards."""
    # The counter holds this session's reads not yet flushed to the statistics, so it is read before and after.
    fetched = "select pg_stat_get_xact_blocks_fetched('jobs_pending_claim'::regclass)"
    with conn.transaction(force_rollback=True):
        before = conn.execute(fetched).fetchone()
        row = conn.execute(
            db.query("job_claim_due"),
            {"now": now, "limit": 10, "lease": timedelta(seconds=60), "flow": None if flow is None else Jsonb(flow)},
        ).fetchone()
        after = conn.execute(fetched).fetchone()
        assert row is not None and before is not None and after is not None
        return sorted(job[0] for job in row[0] or []), int(after[0]) - int(before[0])


def test_jobs_scheduled_for_later_cost_the_claim_nothing(database_url: str, conn: psycopg.Connection[Any]) -> None:
    # 100,000 jobs due tomorrow at two priorities, and five due now: the claim must stop at each
    # priority's first entry past now, not read every later entry of the smaller priority first
    # (as the scan of (priority, run_after, id) with a bound on run_after alone did before
    # PostgreSQL 18's skip scan: the whole index, 496 pages, on every claim and every idle tick).
    for priority in (0, 5):
        conn.execute(
            "insert into jobs (type, payload, priority, run_after) select 't_prio.later', '{}', %(p)s,"
            " now() + interval '1 day' + g * interval '1 second' from generate_series(1, 50000) g",
            {"p": priority},
        )
    due = [
        row[0]
        for row in conn.execute(
            "insert into jobs (type, payload, priority, run_after) select 't_prio.now', '{}', p, now() - interval '1 minute'"
            " from unnest(array[5, 0, 5, 0, 0]) p returning id"
        ).fetchall()
    ]
    conn.execute("vacuum analyze jobs")
    now = db_now(conn)
    flow = {"limits": [{"name": "llm", "count": 100, "seconds": 60, "types": ["t_prio.other"]}]}
    for path in (None, flow):  # the plain claim and the flow-control one
        claimed, pages = _claim_pages(conn, now, path)
        assert claimed == sorted(due)
        assert pages < 40, f"the claim read {pages} pages of jobs_pending_claim"  # the index holds about 500
