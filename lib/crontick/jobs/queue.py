"""Enqueue: add jobs inside the caller's transaction, one statement for one job or for many."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from crontick import tracing
from crontick.db import query
from crontick.errors import CrontickError
from crontick.jobs.debounce import Debounce
from crontick.text import json_problem, start_by_params, text_problem, type_problem

STATUSES = (
    "pending",
    "running",
    "done",
    "failed",
    "cancelled",
    "waiting",
)  # cancelled: an admin, crontick.cancel or an expired start_by; waiting: job.wait_for, job.join


def insert_params(
    type: str,
    payload: Any,
    run_after: datetime | None,
    max_attempts: int | None,
    key: str | None,
    group_key: str | None = None,
    priority: int | None = None,
    debounce: Debounce | None = None,
    start_by: datetime | float | None = None,
) -> dict[str, Any]:
    """The checked parameters of `job_insert` (crontick.django sends them through Django's psycopg2 cursor).

    `priority` None: the priority its handler declares (`@crontick.handler(type, priority=...)`), if
    this process has one for `type`, else 0.
    """
    _check_type(type, "enqueue")
    where = f"enqueue({type!r})"
    _check_options(where, run_after, max_attempts)
    deadline = start_by_params(where, start_by, run_after)
    _check_flow(where, group_key, priority)
    if problem := text_problem("key", key):
        raise CrontickError(f"{where}: {problem}")
    if debounce is not None:
        if not isinstance(debounce, Debounce):
            raise CrontickError(f"{where}: expected debounce=crontick.Debounce(key, seconds, ...), got: {debounce!r}")
        if key is not None:
            raise CrontickError(f"{where}: expected key or debounce, got both (key {key!r})")
        if run_after is not None:
            raise CrontickError(f"{where}: expected run_after or debounce (which sets run_after), got both")
    if priority is None:
        priority = _declared_priority(type)
    if max_attempts is None:
        max_attempts = _declared_max_attempts(type)
    payload = _typed_payload(where, type, payload)
    return {
        "type": type,
        "payload": payload_param(where, payload),
        "run_after": run_after,
        "max_attempts": max_attempts,
        "key": key,
        "group_key": group_key,
        "priority": priority,
        **(debounce.params() if debounce is not None else _NO_DEBOUNCE),
        **deadline,
        "traceparent": tracing.traceparent(),  # the caller's span, while the app traces: the job's span links to it
    }


_NO_DEBOUNCE = {"debounce_key": None, "debounce_seconds": None, "debounce_max_seconds": None}
PRIORITY_RANGE = range(-(2**31), 2**31)


def _check_type(type: Any, where: str) -> None:
    if not isinstance(type, str) or not type:
        raise CrontickError(f"{where}: expected a non-empty job type, got: {type!r}")
    if problem := type_problem(type):
        raise CrontickError(f"{where}: {problem}")


def payload_param(where: str, payload: Any) -> Jsonb:
    """`payload` as the jsonb parameter of an enqueue or a signal, checked first: what jsonb refuses (a NUL or lone
    surrogate in a string, NaN) is a CrontickError naming `where`, before any statement. The JSON text made for the
    check is the one sent (psycopg does not encode it again)."""
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise CrontickError(f"{where}: expected a JSON payload, got {type(payload).__name__}: {exc}") from None
    if problem := json_problem(text):
        raise CrontickError(f"{where}: payload: {problem}")
    return Jsonb(payload, dumps=lambda _: text)


def _check_options(where: str, run_after: datetime | None, max_attempts: int | None) -> None:
    if max_attempts is not None and max_attempts < 1:
        raise CrontickError(f"{where}: expected max_attempts >= 1, got: {max_attempts}")
    if run_after is not None and run_after.tzinfo is None:
        raise CrontickError(f"{where}: expected a timezone-aware run_after, got naive {run_after.isoformat()}")


def _check_flow(where: str, group_key: str | None, priority: int | None) -> None:
    if group_key is not None and (not isinstance(group_key, str) or not group_key):
        raise CrontickError(f"{where}: expected group_key as a non-empty string or None, got: {group_key!r}")
    if problem := text_problem("group_key", group_key):
        raise CrontickError(f"{where}: {problem}")
    if priority is not None and (
        isinstance(priority, bool) or not isinstance(priority, int) or priority not in PRIORITY_RANGE
    ):
        raise CrontickError(f"{where}: expected priority as a 32-bit integer or None, got: {priority!r}")


def enqueue(
    conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any],
    type: str,
    payload: Any,
    *,
    run_after: datetime | None = None,
    max_attempts: int | None = None,
    key: str | None = None,
    group_key: str | None = None,
    priority: int | None = None,
    debounce: Debounce | None = None,
    start_by: datetime | float | None = None,
) -> Any:
    """Add a job inside the caller's transaction and return its id (awaitable for an AsyncConnection).

    With `key`, a job already pending, running or waiting with that key is kept and its id returned.
    `group_key`: jobs sharing it run one at a time, in enqueue order (see Flow control).
    `priority`: smaller is claimed first; None takes the handler's `priority=` (else 0).
    `debounce` (`crontick.Debounce`): merge into the job of this type with that debounce key that has
    not started yet, and return its id (see crontick.Debounce).
    `start_by` (a datetime, or seconds from now): a job not started by then never starts; it ends `cancelled`,
    its last_error beginning with `expired`, no attempt spent and no alert (a debounced merge takes the newest).
    """
    params = insert_params(type, payload, run_after, max_attempts, key, group_key, priority, debounce, start_by)
    if isinstance(conn, psycopg.AsyncConnection):
        return _enqueue_async(conn, params)
    row = conn.execute(query("job_insert"), params).fetchone()
    if row is None:  # lost a race on the key to a transaction that committed mid-statement
        row = conn.execute(query("job_insert"), params).fetchone()
    return _job_id(row, params)


async def _enqueue_async(conn: psycopg.AsyncConnection[Any], params: dict[str, Any]) -> int:
    cur = await conn.execute(query("job_insert"), params)
    row = await cur.fetchone()
    if row is None:
        cur = await conn.execute(query("job_insert"), params)
        row = await cur.fetchone()
    return _job_id(row, params)


def _job_id(row: Any, params: dict[str, Any]) -> int:
    if row is None:
        raise CrontickError(
            f"enqueue({params['type']!r}): expected a job id, got none (key {params['key']!r} contended)"
        )
    return int(row[0])


def enqueue_many(
    conn: psycopg.Connection[Any],
    jobs: Iterable[tuple[str, Any] | tuple[str, Any, str | None]],
    *,
    run_after: datetime | None = None,
    max_attempts: int | None = None,
    group_key: str | None = None,
    priority: int | None = None,
    start_by: datetime | float | None = None,
) -> list[int]:
    """Add many (type, payload) or (type, payload, key) jobs in one statement; returns their ids in order.

    `start_by` gives every job that deadline (a datetime, or seconds from now), as `enqueue`'s does for one.
    `group_key` and `priority` apply to every job (a group's jobs run in list order); `priority`
    None gives each job its handler's `priority=` (else 0), and `max_attempts` None its handler's
    `max_attempts=` (else 4), as `enqueue` does. A job's `key` dedupes as `enqueue`'s does: a job
    already pending, running or waiting with that key (or an earlier one of this list) is kept and
    its id returned in that job's place.
    """
    _check_options("enqueue_many", run_after, max_attempts)
    _check_flow("enqueue_many", group_key, priority)
    deadline = start_by_params("enqueue_many", start_by, run_after)
    rows = jobs if isinstance(jobs, list) else list(jobs)
    if not rows:
        return []
    types = _row_types(rows)
    keyed = _keyed(rows)
    rows = _typed_rows(rows, types)
    declared = {} if priority is not None else {t: p for t in types if (p := _declared_priority(t))}
    attempts = {} if max_attempts is not None else {t: m for t in types if (m := _declared_max_attempts(t))}
    # One JSON document for the whole list (each (type, payload) pair becomes an array),
    # serialised once in C, where a jsonb[] array would quote and escape every payload
    # separately (about 6x slower for 10,000 jobs).
    try:
        document = payload_param("enqueue_many", rows)
    except CrontickError:
        for i, (type, payload, *_) in enumerate(rows):  # which job: looked for only once one is refused
            payload_param(f"enqueue_many: job {i} ({type!r})", payload)
        raise
    params = {
        "jobs": document,
        "run_after": run_after,
        "max_attempts": max_attempts,
        "group_key": group_key,
        "priority": priority,
        "priorities": Jsonb(declared),
        "attempts": Jsonb(attempts),
        **deadline,
        "traceparent": tracing.traceparent(),
    }
    if not keyed:
        return [r[0] for r in conn.execute(query("job_insert_many"), params, binary=True).fetchall()]
    ids: list[int | None] = [r[0] for r in conn.execute(query("job_insert_many_keyed"), params).fetchall()]
    missing = [i for i, job_id in enumerate(ids) if job_id is None]
    if missing:  # a holder committed mid-statement, unseen by it: again for those rows, which now see it
        again = enqueue_many(
            conn,
            [rows[i] for i in missing],
            run_after=run_after,
            max_attempts=max_attempts,
            group_key=group_key,
            priority=priority,
            start_by=start_by,
        )
        for i, job_id in zip(missing, again, strict=True):
            ids[i] = job_id
    return [int(job_id) for job_id in ids if job_id is not None]


def _keyed(rows: list[Any]) -> bool:
    """Whether some job of enqueue_many's list has a key ((type, payload, key)), each key checked."""
    keys = [r[2] if len(r) == 3 else None for r in rows]  # a 3-tuple's key
    if all(k is None for k in keys):
        return False
    for i, key in enumerate(keys):
        if problem := text_problem("key", key):
            raise CrontickError(f"enqueue_many: job {i} ({rows[i][0]!r}): {problem}")
    return True


def _typed_rows(rows: list[Any], types: set[str]) -> list[Any]:
    """Each row's payload as _typed_payload makes it: the list itself when none needs it (the common case: no
    pydantic, or no model among `types` and no model instance among the payloads), else a copy."""
    from crontick.jobs import registry

    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return rows
    if not any(registry.payload_model(t) is not None for t in types) and not any(
        isinstance(row[1], pydantic.BaseModel) for row in rows
    ):
        return rows
    return [
        (row[0], _typed_payload(f"enqueue_many: job {i} ({row[0]!r})", row[0], row[1]), *row[2:])
        for i, row in enumerate(rows)
    ]


def _row_types(rows: list[Any]) -> set[str]:
    """The job types of enqueue_many's rows, each row and type checked (a CrontickError for the first that is bad)."""
    for row in rows:
        if len(row) not in (2, 3) or not isinstance(row[0], str) or not row[0]:
            _check_row(row)
    types = {r[0] for r in rows}
    for type in types:
        _check_type(type, "enqueue_many")
    return types


def _check_row(row: Any) -> None:
    if not isinstance(row, tuple | list) or len(row) not in (2, 3):
        raise CrontickError(f"enqueue_many: expected (type, payload) or (type, payload, key) tuples, got: {row!r:.200}")
    _check_type(row[0], "enqueue_many")


def _typed_payload(where: str, type: str, payload: Any) -> Any:
    """`payload` checked against the pydantic model the handler of `type` declares here (`payload=`), as that model's
    JSON (crontick.jobs.payloads); a model instance of a type with none, as its JSON; else `payload` as given."""
    from crontick.jobs import payloads, registry

    model = registry.payload_model(type)
    return payloads.plain(payload) if model is None else payloads.checked(where, model, payload)


def _declared_max_attempts(type: str) -> int | None:
    """The handler's `max_attempts=` for `type` (None when none is declared here), loaded as _declared_priority is."""
    from crontick.jobs import registry

    return registry.declared_max_attempts(type)


def _declared_priority(type: str) -> int:
    """The handler's `priority=` for `type` (0 when none is registered here). The registry (and the
    retry policies it imports) is loaded only on the first enqueue: an idle tick never needs it."""
    from crontick.jobs import registry

    return registry.declared_priority(type)
