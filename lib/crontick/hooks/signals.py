"""crontick.signal: wake the job that waits on an event key (job.wait_for), inside the caller's transaction, and kick a tick once it commits."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import pq

from crontick.db import query
from crontick.errors import CrontickError
from crontick.hooks import kick
from crontick.jobs.queue import payload_param
from crontick.text import fit_key, text_problem


def signal(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], event_key: str, payload: Any = None) -> Any:
    """Wake the oldest job waiting on `event_key` with `payload` (JSON); its job.wait_for returns it.

    Runs inside the caller's transaction (a psycopg 3 connection; any other driver calls the SQL
    function `crontick.signal(event_key, payload)`): a rolled-back transaction wakes nothing. With
    no job waiting, the signal is kept for the next wait that begins on the key (7 days:
    crontick.workflows.steps.SIGNAL_KEEP_DAYS). Returns the woken job's id, or None when kept
    (awaitable for an AsyncConnection). A tick is kicked once the transaction commits (at once on
    an autocommit connection), as crontick.kick() does: one kick (one thread and one connection that
    wait for the commit) per transaction however many signals it sends, and none with CRONTICK_KICK=off.

    An event key over crontick.text.KEY_MAX_BYTES (one made from a sender's long field, say) is replaced by
    its stable digest (crontick.text.fit_key), as job.wait_for replaces it: a wait and a signal on the same
    long key still meet. The SQL function refuses such a key instead.
    """
    if not isinstance(event_key, str) or not event_key:
        raise CrontickError(f"crontick.signal: expected a non-empty event key, got {event_key!r}")
    if problem := text_problem("an event key", event_key, None):
        raise CrontickError(f"crontick.signal: {problem}")
    event_key = fit_key(event_key)
    params = {"event_key": event_key, "payload": None if payload is None else payload_param("crontick.signal", payload)}
    if isinstance(conn, psycopg.AsyncConnection):
        return _signal_async(conn, params)
    job_id, transaction = conn.execute(query("job_signal"), params).fetchone() or (None, "")
    _kick(conn, event_key, transaction)
    return job_id


async def _signal_async(conn: psycopg.AsyncConnection[Any], params: dict[str, Any]) -> int | None:
    cur = await conn.execute(query("job_signal"), params)
    job_id, transaction = await cur.fetchone() or (None, "")
    _kick(conn, params["event_key"], transaction)
    return job_id


def _kick(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], event_key: str, transaction: str) -> None:
    """Kick now when the signal is committed already (autocommit), else once the caller's transaction ends
    (one kick per transaction, however many signals it sends; none with kicks off)."""
    if conn.info.transaction_status == pq.TransactionStatus.IDLE:
        kick.kick()
    else:
        kick.kick_after_commit(kick.AfterCommit("signal_committed", {"event_key": event_key}, transaction))
