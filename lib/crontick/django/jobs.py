"""Jobs from Django: enqueue in Django's own transaction (psycopg 3 or psycopg2), kick on commit, handlers that use the ORM."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg
from asgiref.sync import sync_to_async
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections, transaction

from crontick import logs
from crontick.db import query
from crontick.django import conf
from crontick.errors import ConfigError, CrontickError
from crontick.hooks import kick as kicks
from crontick.jobs import queue, registry
from crontick.jobs.debounce import Debounce
from crontick.jobs.registry import HandlerFunc
from crontick.retry import RetryPolicy
from crontick.runtime import Runtime


def enqueue(
    type: str,
    payload: Any,
    *,
    run_after: datetime | None = None,
    max_attempts: int | None = None,
    key: str | None = None,
    group_key: str | None = None,
    priority: int | None = None,
    debounce: Debounce | None = None,
    kick: bool = True,
    start_by: datetime | float | None = None,
) -> int:
    """Add a job on Django's default connection, inside its current transaction, and return the job's id.

    Call it inside `transaction.atomic()`: the job commits with your rows, or neither does. On
    psycopg 3 (Django's choice whenever it is installed, and crontick installs it) this is
    `crontick.enqueue` on the connection Django holds; on psycopg2 it is the SQL function
    `crontick.enqueue(...)` through Django's cursor. Both check the same things and return the same id.
    `group_key`, `priority` and `debounce` are `crontick.enqueue`'s (see Flow control), as is `start_by`.
    With `kick` (the default), `transaction.on_commit` starts a tick once the transaction commits
    (see `kick`); a rollback enqueues nothing and kicks nothing.
    """
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql":  # a test settings file on SQLite, say
        raise CrontickError(
            f"crontick.django.enqueue({type!r}): expected Django's default database to be PostgreSQL, where "
            f"crontick's jobs live, got: {connection.vendor}"
        )
    connection.ensure_connection()
    driver = connection.connection
    if isinstance(driver, psycopg.Connection):
        job_id = int(
            queue.enqueue(
                driver,
                type,
                payload,
                run_after=run_after,
                max_attempts=max_attempts,
                key=key,
                group_key=group_key,
                priority=priority,
                debounce=debounce,
                start_by=start_by,
            )
        )
    else:  # psycopg2: the same statement, its payload sent as JSON text (psycopg2 cannot adapt psycopg's Jsonb)
        params = queue.insert_params(
            type, payload, run_after, max_attempts, key, group_key, priority, debounce, start_by
        )
        params["payload"] = json.dumps(params["payload"].obj)
        with connection.cursor() as cursor:
            cursor.execute(query("job_insert"), params)
            row = cursor.fetchone()
        if row is None or row[0] is None:
            raise CrontickError(f"enqueue({type!r}): expected a job id from crontick.enqueue(...), got: {row!r}")
        job_id = int(row[0])
    if kick:
        transaction.on_commit(_kick_after_commit, using=DEFAULT_DB_ALIAS)
    return job_id


_attached = False


def kick() -> None:
    """`crontick.kick()` with crontick's settings from this project (conf.settings): a tick starts now, in a thread.

    For `transaction.on_commit(crontick.django.kick)` after work enqueued by other means (a raw
    cursor, a bulk insert); `enqueue` registers it by itself. Like every kick it never raises: a
    misconfiguration is logged and the scheduled tick runs the work.
    """
    global _attached
    if not _attached:
        try:
            settings = conf.settings()
        except ConfigError as exc:
            logs.warning("kick_failed", mode="none", error=f"crontick is not configured: {exc}")
            return
        kicks.attach(Runtime(settings))
        _attached = True
    kicks.kick()


def _kick_after_commit() -> None:
    kick()


def attached_by_app() -> None:
    """Called by crontick.django.asgi: the mounted app's runtime, attached when it was built, serves the kicks."""
    global _attached
    _attached = True


def handler(
    type: str, *, retry: RetryPolicy | None = None, timeout_seconds: float | None = None
) -> Callable[[HandlerFunc], HandlerFunc]:
    """`@crontick.handler` for a handler that uses Django's ORM: each job starts and ends as a request does.

    Before and after each call, Django's `close_old_connections()` runs in the thread the ORM
    uses for it, so a connection the database dropped (a restart, a pooler's idle timeout) is
    replaced instead of failing every later job in that thread, and with `CONN_MAX_AGE = 0` no
    connection stays open between jobs. `async def` handlers get the same through asgiref, in the
    thread Django's async ORM runs its queries in.
    """

    def register(func: HandlerFunc) -> HandlerFunc:
        registry.handler(type, retry=retry, timeout_seconds=timeout_seconds)(_with_fresh_connections(func))
        return func

    return register


def _with_fresh_connections(func: HandlerFunc) -> HandlerFunc:
    if inspect.iscoroutinefunction(func):
        fresh = sync_to_async(close_old_connections)

        @functools.wraps(func)
        async def run_async(payload: Any, job: Any) -> None:
            await fresh()
            try:
                await func(payload, job)
            finally:
                await fresh()

        return run_async

    @functools.wraps(func)
    def run(payload: Any, job: Any) -> None:
        close_old_connections()
        try:
            func(payload, job)
        finally:
            close_old_connections()

    return run
