"""crontick.cancel: end a job `cancelled` inside the caller's transaction, or ask a running one to stop."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.db import query
from crontick.errors import CrontickError


def cancel(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], job_id: int) -> Any:
    """Cancel job `job_id` inside the caller's transaction and return whether it did (awaitable for an AsyncConnection).

    A pending (or sleeping) or waiting job ends `cancelled` at once. A running one is asked to stop: its next
    job.step, job.sleep or job.wait_for raises crontick.Cancelled, and it ends `cancelled` (not failed; no alert,
    no retry) unless it finishes first. Its unended children (job.spawn) are cancelled with it. False for a job
    that has ended or does not exist. Any other driver calls the SQL function `crontick.cancel(job_id)`.
    """
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise CrontickError(f"crontick.cancel: expected a job id (an integer), got {job_id!r}")
    params = {"id": job_id}
    if isinstance(conn, psycopg.AsyncConnection):
        return _cancel_async(conn, params)
    row = conn.execute(query("job_cancel"), params).fetchone()
    return bool(row and row[0])


async def _cancel_async(conn: psycopg.AsyncConnection[Any], params: dict[str, Any]) -> bool:
    cur = await conn.execute(query("job_cancel"), params)
    row = await cur.fetchone()
    return bool(row and row[0])
