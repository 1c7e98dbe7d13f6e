"""The built-in `webhook` job type against a real HTTP server that records what it receives."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from pytest_httpserver import HTTPServer

import crontick
from crontick.tick.pipeline import TickResult
from tests.support.core_jobs import db_now, job_row, settings_for, tick
from tests.support.servers import free_port


def loopback_tick(database_url: str, conn: psycopg.Connection[Any]) -> TickResult:
    """A tick whose Settings let webhooks reach these tests' receivers on 127.0.0.1, which the default
    refuses (tests/security covers that)."""
    return tick(database_url, settings_for(database_url, webhook_deny_private=False), now=db_now(conn))


def _run_webhook(database_url: str, conn: psycopg.Connection[Any], payload: Any) -> dict[str, Any]:
    job_id = crontick.enqueue(conn, "webhook", payload)
    loopback_tick(database_url, conn)
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
    assert request.headers["Idempotency-Key"] == request.headers["webhook-id"]
    assert request.headers["Idempotency-Key"].startswith(f"crontick-{row['id']}-")


def test_a_retried_webhook_job_sends_the_same_step_key_and_another_job_another(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_oneshot_request("/hook").respond_with_data("busy", status=503)
    httpserver.expect_request("/hook").respond_with_data("", status=204)
    first = crontick.enqueue(conn, "webhook", {"url": httpserver.url_for("/hook"), "json": {"n": 1}})
    loopback_tick(database_url, conn)
    assert job_row(conn, first)["status"] == "pending"
    conn.execute("update jobs set run_after = now() where id = %s", (first,))  # its backoff has passed
    other = crontick.enqueue(conn, "webhook", {"url": httpserver.url_for("/hook"), "json": {"n": 2}})
    loopback_tick(database_url, conn)
    assert (job_row(conn, first)["status"], job_row(conn, first)["attempts"]) == ("done", 2)
    assert job_row(conn, other)["status"] == "done"
    sent = [(json.loads(r.data)["n"], r.headers["Idempotency-Key"], r.headers["webhook-id"]) for r, _ in httpserver.log]
    keys = {n: {k for m, k, _ in sent if m == n} for n in (1, 2)}
    assert [n for n, _, _ in sent].count(1) == 2  # the 503, then the retry
    assert all(key == webhook_id for _, key, webhook_id in sent)
    assert len(keys[1]) == len(keys[2]) == 1 and keys[1] != keys[2]  # stable per job, distinct between jobs
    created = job_row(conn, first)["created_at"]
    expected = crontick.Job(first, "webhook", None, 1, 4, created).step_key("send")
    assert keys[1] == {expected}


def test_retryable_statuses_are_retried(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer
) -> None:
    statuses = [500, 503, 429, 408]
    jobs = {}
    for status in statuses:
        httpserver.expect_request(f"/{status}").respond_with_data("try later", status=status)
        jobs[status] = crontick.enqueue(conn, "webhook", {"url": httpserver.url_for(f"/{status}"), "json": {}})
    assert loopback_tick(database_url, conn).jobs.retried == len(statuses)
    for status, job_id in jobs.items():
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("pending", 1)
        assert f"answered HTTP {status}: try later" in row["last_error"]
        assert row["run_after"] > db_now(conn) + timedelta(seconds=40)


def test_other_4xx_fails_at_once_with_status_and_500_bytes_of_body(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer
) -> None:
    # Not a run of one letter another test's hook secret is made of (declared secrets are scrubbed process-wide).
    httpserver.expect_request("/hook").respond_with_data("a" * 450 + "w" * 100, status=404)
    row = _run_webhook(database_url, conn, {"url": httpserver.url_for("/hook") + "?token=s3cr3t-in-query", "json": {}})
    assert (row["status"], row["attempts"]) == ("failed", 1)
    hook = httpserver.url_for("/hook")
    assert row["last_error"] == f"PermanentError: webhook {hook} answered HTTP 404: " + "a" * 450 + "w" * 50
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
    assert loopback_tick(database_url, conn).jobs.failed == len(BAD_PAYLOADS)
    for job_id, expected in jobs:
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("failed", 1)
        assert row["last_error"] == "PayloadError: " + expected


@pytest.mark.parametrize("deny_private", [False, True])
def test_settings_built_in_code_reach_the_webhook_job_not_the_environment(
    deny_private: bool,
    database_url: str,
    conn: psycopg.Connection[Any],
    httpserver: HTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """create_app(Settings(...)) and friends: the tick's own Settings decide, whatever the environment says."""
    monkeypatch.setenv("CRONTICK_WEBHOOK_DENY_PRIVATE", "0" if deny_private else "1")  # the opposite: never read
    httpserver.expect_request("/hook").respond_with_data("", status=204)
    job_id = crontick.enqueue(conn, "webhook", {"url": httpserver.url_for("/hook"), "json": {"n": 1}})
    tick(database_url, settings_for(database_url, webhook_deny_private=deny_private), now=db_now(conn))
    row = job_row(conn, job_id)
    if deny_private:
        assert row["status"] == "failed" and "which is internal" in row["last_error"], row
        assert httpserver.log == []
    else:
        assert (row["status"], row["last_error"]) == ("done", None), row
        [(request, _)] = httpserver.log
        assert json.loads(request.data) == {"n": 1}
