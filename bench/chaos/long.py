"""Chaos scenario 13: workflows longer than a tick (a job.map of 12 steps under a 1 s budget, then an at_most_once
send), half `async def`, half `def`, drained by `crontick tick --drain` processes that are SIGKILLed every few seconds.
They finish over several ticks by yielding (no attempt spent); no step whose result was recorded is called again, no
at_most_once send reaches the provider twice, and every workflow ends done, or failed with a reason (a kill during
its send: outcome unknown, never resent)."""

from __future__ import annotations

import random
import time
from typing import Any

from .long_handlers import CALLS_SQL, ITEMS, TYPES
from .rig import Rig
from .scenario import Row, Sizes
from .workflows import TICKS, drain_under_kills

NAME = "13 long workflows yield under kill -9"
MAX_ATTEMPTS = 12
ENV = {
    "CRONTICK_HANDLERS": "bench.chaos.long_handlers",
    "CRONTICK_TIME_BUDGET_SECONDS": "1",
    "CRONTICK_LEASE_SECONDS": "2",
    "CRONTICK_BATCH_SIZE": "25",
}


def long_workflows(rig: Rig, sizes: Sizes) -> Row:
    rig.reset()
    rig.sql(CALLS_SQL)
    rig.sql("truncate chaos_step_calls, job_steps, crontick_ticks")
    n = sizes.long_workflows
    rig.sql(
        "insert into jobs (type, payload, max_attempts) select (%s::text[])[1 + g %% 2], "
        "jsonb_build_object('url', %s::text), %s from generate_series(1, %s) g",
        (list(TYPES), rig.provider.url, MAX_ATTEMPTS, n),
    )
    began = time.monotonic()
    kills = drain_under_kills(rig, rig.env(**ENV), sizes, random.Random(13), TYPES)
    return _verdict(rig, n, kills, time.monotonic() - began)


def _one(rig: Rig, sql: str, params: Any = None) -> int:
    return int(rig.sql(sql, params)[0][0] or 0)


def _verdict(rig: Rig, n: int, kills: int, seconds: float) -> Row:
    types = list(TYPES)
    statuses = dict(rig.sql("select status, count(*) from jobs where type = any(%s) group by status", (types,)))
    done, failed = statuses.get("done", 0), statuses.get("failed", 0)
    unclear = _one(
        rig,
        "select count(*) from jobs where type = any(%s) and (status not in ('done', 'failed')"
        " or (status = 'failed' and coalesce(last_error, '') = ''))",
        (types,),
    )
    unknown = _one(
        rig, "select count(*) from jobs where type = any(%s) and last_error like '%%outcome was never%%'", (types,)
    )
    # A call that began after its step's result was recorded: a recorded step run again (must be 0).
    after_recorded = _one(
        rig,
        "select count(*) from chaos_step_calls c join job_steps s on s.job_id = c.job_id and s.name = c.step"
        " where c.called_at > s.created_at",
    )
    sends = rig.provider.sends
    sent_twice = sum(1 for count in sends.values() if count > 1)
    called_twice = _one(
        rig,
        "select count(*) from (select 1 from chaos_step_calls where step = 'send' group by job_id having count(*) > 1) t",
    )
    # A done workflow: every item and its send recorded once, and the provider got that send.
    incomplete = _one(
        rig,
        "select count(*) from jobs j where j.type = any(%s) and j.status = 'done' and (select count(*) from job_steps s"
        " where s.job_id = j.id and (s.name like 'rows[%%' or s.name = 'send')) <> %s",
        (types, ITEMS + 1),
    )
    done_ids = [r[0] for r in rig.sql("select id from jobs where type = any(%s) and status = 'done'", (types,))]
    undelivered = sum(1 for job_id in done_ids if sends.get(job_id, 0) != 1)
    yielded = _one(rig, "select sum((summary->'jobs'->>'yielded')::int) from crontick_ticks")
    # A workflow's steps take 1.8 s (12 x 0.15 s) against a 1 s budget: each done one spans ticks; most with no
    # attempt spent (its runs yielded), the others rescued after a kill.
    across, unspent = rig.sql(
        "select count(*) filter (where span > 1), count(*) filter (where span > 1 and attempts = 1) from"
        " (select j.attempts, extract(epoch from max(s.created_at) - min(s.created_at)) as span from jobs j"
        " join job_steps s on s.job_id = j.id where j.type = any(%s) and j.status = 'done' group by j.id) t",
        (types,),
    )[0]
    calls = _one(rig, "select count(*) from chaos_step_calls")
    ok = (
        not (unclear or after_recorded or sent_twice or called_twice or incomplete or undelivered)
        and done + failed == n
    )
    ok = ok and yielded > 0
    return Row(
        NAME,
        f"{n:,} workflows of {ITEMS} map items + 1 at_most_once send (half def), a 1 s budget, {kills} kill -9 of "
        f"{TICKS} `tick --drain` processes, {seconds:.0f} s",
        f"{done:,} done, {failed} failed ({unknown} outcome unknown: killed mid-send, not resent), {unclear} neither; "
        f"{yielded:,} yields recorded by ticks, {across:,} done across ticks ({unspent:,} on their first attempt); "
        f"{calls:,} step calls, {after_recorded} after their result was recorded; provider: {sum(sends.values()):,} "
        f"sends, {sent_twice} jobs sent twice, {called_twice} at_most_once steps called twice, {undelivered} done "
        "without their one send",
        lost=unclear + undelivered + incomplete,
        duplicated=after_recorded + sent_twice + called_twice,
        ok=ok,
    )
