"""Each failed attempt keeps its traceback in the job's history (bounded, secrets scrubbed); last_error stays the
one-line summary. Read through the JSON API (history[].traceback) and the admin's job page, over real HTTP."""

from __future__ import annotations

import re
from typing import Any

import httpx
import psycopg

import crontick
from tests.admin.api_support import ADMIN, API_ADMIN_SECRET, api_settings
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import db_now, tick
from tests.support.databases import url_of


def _lookup_customer(customer_id: int) -> None:
    raise LookupError(f"customer {customer_id} not found (token {TEST_SECRET})")


@crontick.handler("t_trace.nested")
def nested(payload: Any, job: crontick.Job) -> None:
    _lookup_customer(payload["customer"])


def _ping(n: int) -> None:  # two functions calling each other: frames Python cannot fold into "repeated"
    if n == 0:
        raise RecursionError("bottom")
    _pong(n - 1)


def _pong(n: int) -> None:
    _ping(n - 1)


@crontick.handler("t_trace.deep")
def deep(payload: Any, job: crontick.Job) -> None:
    _ping(400)


def _add(conn: psycopg.Connection[Any], type: str, payload: str = "{}") -> int:
    row = conn.execute(
        "insert into jobs (type, payload, max_attempts) values (%(t)s, %(p)s::jsonb, 1) returning id",
        {"t": type, "p": payload},
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_failed_attempts_traceback_is_kept_scrubbed_and_shown(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any
) -> None:
    job_id = _add(conn, "t_trace.nested", '{"customer": 42}')
    tick(database_url, now=db_now(conn))
    last_error = conn.execute("select last_error from jobs where id = %(id)s", {"id": job_id}).fetchone()
    assert last_error == ("LookupError: customer 42 not found (token [redacted])",)
    with live_app(api_settings(url_of(database_url))) as base:
        detail = httpx.get(f"{base}/api/admin/jobs/{job_id}", headers=ADMIN, timeout=10).json()
        with httpx.Client(base_url=base, headers={"Sec-Fetch-Site": "same-origin"}, timeout=10) as browser:
            signed_in = browser.post("/admin/login", data={"secret": API_ADMIN_SECRET}, follow_redirects=True)
            assert signed_in.status_code == 200, signed_in.text
            page = browser.get(f"/admin/jobs/{job_id}").text
    [attempt] = detail["history"]
    trace = attempt["traceback"]
    assert trace.startswith("Traceback (most recent call last):")
    assert "in nested" in trace and "in _lookup_customer" in trace  # the frames, innermost last
    assert trace.rstrip().endswith("LookupError: customer 42 not found (token [redacted])")
    assert TEST_SECRET not in trace and TEST_SECRET not in page
    assert re.search(r"<details class=\"trace\"><summary>Traceback</summary>", page)
    assert "in _lookup_customer" in page


def test_a_huge_traceback_keeps_its_ends_within_16_kib(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = _add(conn, "t_trace.deep")
    tick(database_url, now=db_now(conn))
    (trace,) = conn.execute("select traceback from job_attempts where job_id = %(id)s", {"id": job_id}).fetchone() or (
        None,
    )
    assert trace is not None and len(trace) <= 16 * 1024
    assert trace.startswith("Traceback (most recent call last):") and "characters of traceback cut" in trace
    assert trace.rstrip().endswith("RecursionError: bottom")


def test_a_job_that_succeeds_stores_no_traceback(database_url: str, conn: psycopg.Connection[Any]) -> None:
    job_id = _add(conn, "t_core.ok")
    tick(database_url, now=db_now(conn))
    assert conn.execute("select count(*) from job_attempts where job_id = %(id)s", {"id": job_id}).fetchone() == (0,)
