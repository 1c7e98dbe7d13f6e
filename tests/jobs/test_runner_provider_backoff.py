"""Provider back-off: a handler whose httpx call gets 429 or 503 with Retry-After is put back for that long, spending no attempt."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import psycopg
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

import crontick
from crontick.jobs import decision
from tests.support.core_jobs import db_now, job_row, tick


class ProviderDown(Exception):
    """An app's own error raised from the SDK's: the response is found down the chain."""


@crontick.handler("t_backoff.llm")
def call_llm(payload: Any, job: crontick.Job) -> None:
    try:
        httpx.post(payload["url"], json={"prompt": "hi"}, timeout=5).raise_for_status()
    except httpx.HTTPStatusError as exc:
        if payload.get("wrap"):
            raise ProviderDown("the LLM said no") from exc
        raise


def _answer(httpserver: HTTPServer, status: int, headers: dict[str, str]) -> str:
    httpserver.expect_request("/v1/chat").respond_with_response(Response("slow down", status, headers=headers))
    return httpserver.url_for("/v1/chat")


@pytest.mark.parametrize(
    ("status", "headers", "wait"),
    [
        (429, {"Retry-After": "30"}, 30),
        (503, {"Retry-After": "http-date+300"}, 300),
        (429, {"Retry-After": "30", "retry-after-ms": "1500"}, 1.5),  # OpenAI's and Anthropic's finer header wins
        (429, {"Retry-After": "86400"}, 3600),  # longer than an hour: capped
    ],
    ids=["429-seconds", "503-http-date", "429-retry-after-ms", "429-capped"],
)
def test_retry_after_snoozes_the_job_without_spending_an_attempt(
    database_url: str,
    conn: psycopg.Connection[Any],
    httpserver: HTTPServer,
    status: int,
    headers: dict[str, str],
    wait: float,
) -> None:
    if headers["Retry-After"].startswith("http-date"):
        headers = {"Retry-After": format_datetime(datetime.now(UTC) + timedelta(seconds=300), usegmt=True)}
    job_id = crontick.enqueue(conn, "t_backoff.llm", {"url": _answer(httpserver, status, headers), "wrap": wait == 30})
    now = db_now(conn)
    result = tick(database_url, now=now)
    assert (result.jobs.snoozed, result.jobs.retried, result.jobs.failed) == (1, 0, 0)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["snoozes"]) == ("pending", 0, 1)
    slack = 5 if wait == 300 else 1  # an HTTP date has whole seconds, and this host's clock is not the database's
    late = now + timedelta(seconds=wait * (1 + 0.03) + slack)
    assert now + timedelta(seconds=wait - slack) <= row["run_after"] <= late, row["run_after"] - now
    assert row["last_error"].startswith("Throttled: ")
    assert "Retry-After" in row["last_error"]


@pytest.mark.parametrize("status", [429, 503, 500])
def test_without_retry_after_or_throttle_status_it_is_an_ordinary_failure(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer, status: int
) -> None:
    headers = {} if status != 500 else {"Retry-After": "30"}
    job_id = crontick.enqueue(conn, "t_backoff.llm", {"url": _answer(httpserver, status, headers)})
    now = db_now(conn)
    result = tick(database_url, now=now)
    assert (result.jobs.snoozed, result.jobs.retried) == (0, 1)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["snoozes"]) == ("pending", 1, 0)
    assert row["last_error"].startswith("HTTPStatusError: ")


def test_a_job_throttled_forever_still_ends_failed(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer
) -> None:
    url = _answer(httpserver, 429, {"Retry-After": "600"})
    job_id = crontick.enqueue(conn, "t_backoff.llm", {"url": url}, max_attempts=2)
    conn.execute("update jobs set snoozes = %(n)s where id = %(id)s", {"n": decision.MAX_SNOOZES, "id": job_id})
    now = db_now(conn)
    assert tick(database_url, now=now).jobs.retried == 1  # no snooze left: a failed attempt, waiting out Retry-After
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert row["run_after"] >= now + timedelta(seconds=600)
    tick(database_url, now=row["run_after"] + timedelta(seconds=1))
    assert job_row(conn, job_id)["status"] == "failed"
