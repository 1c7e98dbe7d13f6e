"""An inbound event is one statement on the wire, new or redelivered: the record and the job commit together."""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import psycopg
from psycopg import pq

from crontick.hooks.endpoint import record
from crontick.hooks.inbound import hooks
from crontick.runtime import Runtime
from tests.support.hooks import settings_for
from tests.support.wire import statement_names


def test_new_and_duplicate_events_are_one_statement_each(database_url: str, conn: psycopg.Connection[Any]) -> None:
    hook = hooks()["t-stripe"]

    async def go() -> list[tuple[tuple[int, bool], list[str]]]:
        rt = Runtime(settings_for(database_url))
        assert rt.db is not None
        db_conn = await rt.db.connection()
        results = []
        for _ in range(2):
            with tempfile.TemporaryFile() as trace:
                db_conn.pgconn.trace(trace.fileno())
                db_conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
                try:
                    outcome = await record(
                        rt,
                        hook,
                        "evt_wire",
                        {
                            "hook": "t-stripe",
                            "event_id": "evt_wire",
                            "received_at": "2026-11-30T12:00:00+00:00",
                            "event": {},
                        },
                    )
                finally:
                    db_conn.pgconn.untrace()
                trace.seek(0)
                results.append((outcome, statement_names(trace.read().decode("utf-8", "replace"))))
        await rt.db.close()
        return results

    (first, first_statements), (again, again_statements) = asyncio.run(go())
    assert first_statements == again_statements == ["inbound_event_record"]
    assert first[1] is True and again == (first[0], False)
    assert conn.execute("select count(*) from jobs").fetchone() == (1,)
