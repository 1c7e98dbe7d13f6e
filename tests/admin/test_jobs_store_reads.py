"""The jobs' store: a read blocked past its timeout raises QueryTimeout, and a viewer cannot act even through the store."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from crontick.admin.jobs import store
from crontick.errors import CrontickError, QueryTimeout
from tests.admin.api_support import insert_jobs
from tests.admin.store_support import run


def test_a_read_blocked_past_its_timeout_raises_query_timeout(database_url: str) -> None:
    with psycopg.connect(database_url) as locker:
        locker.execute("lock table jobs in access exclusive mode")
        with pytest.raises(QueryTimeout, match="expected an answer within 2s"):
            run(database_url, lambda c: store.list_jobs(c))


def test_a_viewer_cannot_act_even_through_the_store(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = insert_jobs(conn, 1)
    with pytest.raises(CrontickError, match="expected admin or cli"):
        run(database_url, lambda c: store.retry_job(c, job_id, role="viewer"))
