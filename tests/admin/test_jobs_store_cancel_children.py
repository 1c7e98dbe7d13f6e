"""The admin's cancel (and `crontick cancel`, which calls it) cancels a job's unended children with it, as crontick.cancel
does."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.admin.jobs import store
from tests.admin.store_support import run


def test_an_admin_cancel_of_a_parent_cancels_its_unended_children(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    [(parent,)] = conn.execute(
        "insert into jobs (type, payload, status) values ('t_adm_kids.p', '{}', 'waiting') returning id"
    ).fetchall()
    kids = conn.execute(
        "insert into jobs (type, payload, status, parent_id) select 't_adm_kids.c', '{}', s, %(p)s"
        " from unnest(array['pending', 'done', 'waiting']) s returning id",
        {"p": parent},
    ).fetchall()
    result = run(database_url, lambda c: store.cancel_job(c, parent, role="admin"))
    assert result.ok
    statuses = conn.execute(
        "select status from jobs where id = any(%(ids)s) order by id", {"ids": [k[0] for k in kids]}
    )
    assert statuses.fetchall() == [("cancelled",), ("done",), ("cancelled",)]
