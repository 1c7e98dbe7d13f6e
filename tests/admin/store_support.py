"""Helpers for the admin store's tests: run one store call on its own connection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from crontick import db
from crontick.admin import tx

T = TypeVar("T")


def run(url: str, work: Callable[[tx.Conn], Awaitable[T]]) -> T:
    async def go() -> T:
        conn = await db.connect(url)
        try:
            return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(go())


# Rows of several types and statuses (test_jobs_store_status_lists, test_overview_store).
MIXED = """
insert into jobs (type, payload, status, attempts, max_attempts, last_error, run_after, finished_at)
select 't_merge.' || (g % 4), jsonb_build_object('n', g), s.status, 1, 1, 'ValueError: n=' || g,
    now() + case when g % 2 = 0 then interval '1 hour' else interval '-1 minute' end,
    case when s.status in ('done', 'failed') then now() end
from generate_series(1, 90) g,
     lateral (select (array['failed', 'done', 'pending'])[g % 3 + 1] as status) s
order by g
"""

GROUPED = """
insert into jobs (type, payload, status, group_key, run_after, locked_until)
select 't_merge.' || (g % 2), jsonb_build_object('g', g), case when g = 0 then 'running' else 'pending' end, 'conv:1',
    now() + case when g % 2 = 0 then interval '1 hour' else interval '-1 minute' end,
    case when g = 0 then now() + interval '1 minute' end
from generate_series(0, 5) g order by g;
insert into jobs (type, payload, status, locked_until)
values ('t_merge.9', '{}', 'waiting', null), ('t_merge.3', '{}', 'running', now() + interval '1 minute')
"""
