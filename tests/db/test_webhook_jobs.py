"""The built-in `webhook` job type against a real HTTP server that records what it receives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from pytest_httpserver import HTTPServer

import crontick
from crontick import builtin
from tests.conftest import free_port
from tests.db.core_jobs import db_now, job_row, tick


@pytest.fixture(autouse=True)
def _allow_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """These tests' receivers listen on 127.0.0.1, which the default refuses (tests/security covers that)."""
    monkeypatch.setenv("CRONTICK_WEBHOOK_DENY_PRIVATE", "0")
    builtin.env_settings.cache_clear()
    yield
    builtin.env_settings.cache_clear()


def _run_webhook(database_url: str, conn: psycopg.Connection[Any], payload: Any) -> dict[str, Any]:
    job_id = crontick.enqueue(conn, "webhook", payload)
    tick(database_url, now=db_now(conn))
    return job_row(conn, job_id)


def test_2xx_succeeds_and_posts_the_json(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/hook", method="POST").respond_with_data("", status=204)
    row = _run_webhook(database_url, conn, {"url": httpserver.url_for("/hook"), "json": {"order": 7, "ok": True}})
    assert (row["status"], row["attempts"], row["last_error"]) == ("done", 1, None)
    [(request, _)] = httpserver.log
    assert json.loads(request.data) == {"order": 7, "ok": True}
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Idempotency-Key"] == f"job:{row['id']}"


def test_retryable_statuses_are_retried(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer
) -> None:
    statuses = [500, 503, 429, 408]
    jobs = {}
    for status in statuses:
        httpserver.expect_request(f"/{status}").respond_with_data("try later", status=status)
        jobs[status] = crontick.enqueue(conn, "webhook", {"url": httpserver.url_for(f"/{status}"), "json": {}})
    assert tick(database_url, now=db_now(conn)).jobs.retried == len(statuses)
    for status, job_id in jobs.items():
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("pending", 1)
        assert f"answered HTTP {status}: try later" in row["last_error"]
        assert row["run_after"] > db_now(conn) + timedelta(seconds=40)


def test_other_4xx_fails_at_once_with_status_and_500_bytes_of_body(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/hook").respond_with_data("a" * 450 + "b" * 100, status=404)
    row = _run_webhook(database_url, conn, {"url": httpserver.url_for("/hook") + "?token=s3cr3t-in-query", "json": {}})
    assert (row["status"], row["attempts"]) == ("failed", 1)
    hook = httpserver.url_for("/hook")
    assert row["last_error"] == f"PermanentError: webhook {hook} answered HTTP 404: " + "a" * 450 + "b" * 50
    assert "s3cr3t" not in row["last_error"]  # query strings may carry tokens; never stored


def test_connection_refused_is_retried(database_url: str, conn: psycopg.Connection[Any]) -> None:
    url = f"http://127.0.0.1:{free_port()}/hook"
    row = _run_webhook(database_url, conn, {"url": url, "json": {}})
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert url in row["last_error"] and "ConnectError" in row["last_error"]


BAD_PAYLOADS = [
    ({"json": {}}, 'webhook: expected payload {"url": "https://…", "json": <any JSON>}, got: {\'json\': {}}'),
    (
        {"url": "http://x"},
        'webhook: expected payload {"url": "https://…", "json": <any JSON>}, got: {\'url\': \'http://x\'}',
    ),
    ("just text", 'webhook: expected payload {"url": "https://…", "json": <any JSON>}, got: \'just text\''),
    (
        {"url": "ftp://files", "json": {}},
        "webhook: expected payload a \"url\" starting with http:// or https://, got: 'ftp://files'",
    ),
]


def test_bad_payload_fails_saying_what_was_expected(database_url: str, conn: psycopg.Connection[Any]) -> None:
    jobs = [(crontick.enqueue(conn, "webhook", payload), expected) for payload, expected in BAD_PAYLOADS]
    assert tick(database_url, now=db_now(conn)).jobs.failed == len(BAD_PAYLOADS)
    for job_id, expected in jobs:
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("failed", 1)
        assert row["last_error"] == "PayloadError: " + expected
