"""Which named queries a connection sent: read off libpq's trace, for the tests that count statements on the wire."""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from itertools import pairwise
from typing import Any, TypeVar

import psycopg
from psycopg import pq

from crontick import db
from crontick.tick.pipeline import run_tick

T = TypeVar("T")

STATEMENT = re.compile(r"^F\t\d+\t(Parse|Query)\t", re.MULTILINE)
PARAMETER = re.compile(r"%\(\w+\)s")


def statement_names(trace: str) -> list[str]:
    """The named query behind each statement in a trace (or its first words, if it is not one)."""
    names = []
    starts = [m.start() for m in STATEMENT.finditer(trace)] + [len(trace)]
    for begin, end in pairwise(starts):
        text = trace[begin:end]
        # A named query's text between its parameters appears verbatim in its Parse message. The
        # longest query that matches: tick_probe begins as job_claim_due does.
        matching = [n for n, q in db.QUERIES.items() if all(piece in text for piece in _pieces(q))]
        name = max(matching, key=lambda n: len(db.QUERIES[n]), default=None)
        names.append(name or text.split("\t", 3)[-1][:60])
    return names


def _pieces(query: str) -> list[str]:
    """The query's text between its parameters, as sent: psycopg sends `%%` (a format() placeholder) as `%`."""
    return [piece.strip().replace("%%", "%") for piece in PARAMETER.split(query) if piece.strip()]


def traced(url: str, run: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> tuple[T, list[str]]:
    """`run` on a new connection, and the named queries it sent."""

    async def go() -> tuple[T, list[str]]:
        conn = await db.connect(url)
        with tempfile.TemporaryFile() as trace:
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
            try:
                result = await run(conn)
            finally:
                conn.pgconn.untrace()
                await conn.close()
            trace.seek(0)
            return result, statement_names(trace.read().decode("utf-8", "replace"))

    return asyncio.run(go())


def tick_statements(url: str, conn: psycopg.Connection[Any], *, jobs: int, concurrency: int) -> Counter[str]:
    """One tick of a batch of `jobs` (every due job, each to succeed), and how often it sent each named query."""
    from tests.support.core_jobs import db_now, settings_for  # here: bench/ imports this module, core_jobs pytest

    settings = settings_for(url, batch_size=jobs, concurrency=concurrency)
    now = db_now(conn)
    result, names = traced(url, lambda c: run_tick(c, settings, now=now, source="test"))
    assert result.jobs.succeeded == jobs, result.jobs
    return Counter(names)
