"""Job alerts over real HTTP: one per final failure, signed, retried after a 500, closed after the last failure."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from werkzeug import Response

import crontick
from crontick.tick import alerts as alerts_module
from tests.support import core_jobs  # noqa: F401  (registers the t_core.* job types)
from tests.support.http_checks import LiveApp
from tests.support.reminders import Provider, Received
from tests.support.waking import posted_tick
from tests.tick.alerts_support import alert_settings, alerts, make_alerts_due, received_alerts, verified


def make_due(conn: psycopg.Connection[Any]) -> None:
    """Fake time for a job retry: its backoff has passed."""
    conn.execute("update jobs set run_after = now() - interval '1 second' where status = 'pending'")


def answer(status: int, times: int | None = None) -> Any:
    """The receiver answers `status` (the first `times` requests, or always), then 200 "ok" as Slack does."""

    def behave(received: Received, n: int) -> Response:
        if times is None or n <= times:
            return Response(json.dumps({"error": "nope"}), status, content_type="application/json")
        return Response("ok", 200, content_type="text/plain")

    return behave


def test_a_job_failing_for_good_raises_exactly_one_signed_alert(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    receiver.behave = answer(200, times=0)
    job_id = crontick.enqueue(conn, "t_core.fail", {}, max_attempts=2)
    with live_app(alert_settings(database_url, receiver)) as url:
        first = posted_tick(url)
        assert first["jobs"]["retried"] == 1 and received_alerts(receiver) == []  # a retry is no alert
        make_due(conn)
        assert posted_tick(url)["jobs"]["failed"] == 1
        for _ in range(3):  # later ticks, with and without work, send nothing more
            make_due(conn)
            posted_tick(url)
    [sent] = received_alerts(receiver)
    body = verified(sent)
    assert body["event"] == "job_failed" and body["job_id"] == job_id and body["job_type"] == "t_core.fail"
    assert body["attempts"] == 2 and "boom on attempt 2" in body["error"]
    assert body["text"].startswith(f"crontick: job {job_id} (t_core.fail) failed for good after 2 attempts: ")
    assert "\n" not in body["text"]
    assert (
        sent.headers["content-type"] == "application/json" and sent.headers["webhook-id"] == f"alert_{body['alert_id']}"
    )
    [row] = alerts(conn)
    assert row["status"] == "sent" and row["attempts"] == 1 and row["sent_at"] is not None


def test_an_endpoint_answering_500_gets_the_alert_on_a_later_tick(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    receiver.behave = answer(500, times=1)
    job_id = crontick.enqueue(conn, "t_core.permanent", {})
    with live_app(alert_settings(database_url, receiver)) as url:
        assert posted_tick(url)["jobs"]["failed"] == 1
        [row] = alerts(conn)
        assert row["status"] == "pending" and row["attempts"] == 1 and "HTTP 500" in row["last_error"]
        assert "not-a-real-token" not in row["last_error"]  # the URL's path is a secret (Slack, Discord)
        posted_tick(url)  # the retry is not due yet: nothing is sent
        assert len(received_alerts(receiver)) == 1
        make_alerts_due(conn, conn.execute("select now()").fetchone()[0])  # type: ignore[index]
        posted_tick(url)
        posted_tick(url)
    first, second = received_alerts(receiver)
    assert first.body == second.body and first.headers["webhook-id"] == second.headers["webhook-id"]
    assert verified(second)["job_id"] == job_id
    [row] = alerts(conn)
    assert row["status"] == "sent" and row["attempts"] == 2


def test_the_last_failed_attempt_closes_the_alert_and_raises_no_other(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    receiver.behave = answer(503)
    crontick.enqueue(conn, "t_core.permanent", {})
    with live_app(alert_settings(database_url, receiver)) as url:
        for _ in range(alerts_module.MAX_ATTEMPTS + 2):
            posted_tick(url)
            make_alerts_due(conn, conn.execute("select now()").fetchone()[0])  # type: ignore[index]
    assert len(received_alerts(receiver)) == alerts_module.MAX_ATTEMPTS
    [row] = alerts(conn)  # no alert about the alert
    assert row["status"] == "failed" and row["attempts"] == alerts_module.MAX_ATTEMPTS


def test_a_refusing_endpoint_closes_the_alert_at_once(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    receiver.behave = answer(404)  # Slack's answer for a revoked webhook: retrying cannot help
    crontick.enqueue(conn, "t_core.permanent", {})
    with live_app(alert_settings(database_url, receiver)) as url:
        posted_tick(url)
        make_alerts_due(conn, conn.execute("select now()").fetchone()[0])  # type: ignore[index]
        posted_tick(url)
    assert len(received_alerts(receiver)) == 1
    [row] = alerts(conn)
    assert row["status"] == "failed" and "HTTP 404" in row["last_error"]


def test_without_a_url_alerts_are_recorded_and_nothing_is_sent(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    job_id = crontick.enqueue(conn, "t_core.permanent", {})
    with live_app(alert_settings(database_url, receiver, alert_webhook_url=None)) as url:
        posted_tick(url)
        posted_tick(url)
    assert received_alerts(receiver) == []
    [row] = alerts(conn)
    assert row["event"] == "job_failed" and row["body"]["job_id"] == job_id
    assert row["status"] == "pending" and row["attempts"] == 0


def test_a_rescued_job_out_of_attempts_raises_one_alert(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], receiver: Provider
) -> None:
    receiver.behave = answer(200, times=0)
    job_id = crontick.enqueue(conn, "t_core.ok", {}, max_attempts=1)
    # What a tick killed mid-run leaves behind: its last attempt still running, the lease passed.
    conn.execute(
        "update jobs set status = 'running', attempts = 1, locked_until = now() - interval '1 minute' where id = %s",
        (job_id,),
    )
    with live_app(alert_settings(database_url, receiver)) as url:
        assert posted_tick(url)["jobs"]["rescued"] == 1
        posted_tick(url)
    [sent] = received_alerts(receiver)
    body = verified(sent)
    assert body["event"] == "job_failed" and body["job_id"] == job_id and "LeaseExpired" in body["error"]
