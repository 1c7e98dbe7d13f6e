"""The channels as job types (send_email, send_sms, send_whatsapp) and the webhook job type, run by real ticks."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from werkzeug import Response

import crontick
from crontick.jobs import builtin
from tests.support.reminders import EMAIL_KEY, TWILIO_SID, Provider, Received, settings_for, slow, tick
from tests.support.servers import free_port

# What the job types' tick is given: the test provider's credentials (settings_for), this sender and a short
# timeout, and loopback allowed for webhooks (the provider listens on 127.0.0.1, which the webhook job refuses
# by default; tests/security covers that). Built in code: the job types read the tick's Settings, not the env.
CHANNELS = {
    "email_from": "Shop <hello@shop.example>",
    "delivery_timeout_seconds": 0.3,
    "webhook_deny_private": False,
}


def run_jobs(database_url: str, conn: psycopg.Connection[Any], provider: Provider, **changes: Any) -> None:
    now = conn.execute("select now() + interval '1 second'").fetchone()[0]  # type: ignore[index]
    tick(database_url, settings_for(database_url, provider, "console", **{**CHANNELS, **changes}), now)


def job(conn: psycopg.Connection[Any], job_id: int) -> dict[str, Any]:
    row = conn.cursor(row_factory=dict_row).execute("select * from jobs where id = %s", (job_id,)).fetchone()
    assert row is not None
    return row


def test_welcome_email_enqueued_in_the_signup_transaction_is_sent(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    conn.execute("create table users (id bigint generated always as identity primary key, email text not null)")
    with psycopg.connect(database_url) as app, app.transaction():
        user_id = app.execute("insert into users (email) values ('ada@example.com') returning id").fetchone()[0]  # type: ignore[index]
        job_id = crontick.enqueue(
            app,
            "send_email",
            {
                "to": "ada@example.com",
                "subject": "Welcome!",
                "text": "Thanks for signing up.",
                "html": "<p>Thanks!</p>",
            },
            key=f"welcome:{user_id}",
        )
    run_jobs(database_url, conn, provider)

    [r] = provider.requests
    assert (r.method, r.path, r.headers["authorization"]) == ("POST", "/emails", f"Bearer {EMAIL_KEY}")
    assert r.headers["idempotency-key"].startswith(f"crontick-{job_id}-")  # job.step_key("send")
    assert r.json == {
        "from": "Shop <hello@shop.example>",
        "to": ["ada@example.com"],
        "subject": "Welcome!",
        "text": "Thanks for signing up.",
        "html": "<p>Thanks!</p>",
    }
    assert job(conn, job_id)["status"] == "done"


def test_a_rolled_back_signup_sends_nothing(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    with psycopg.connect(database_url) as app:
        with app.transaction(force_rollback=True):
            crontick.enqueue(app, "send_email", {"to": "ada@example.com", "subject": "Welcome!", "text": "Hi"})
    run_jobs(database_url, conn, provider)
    assert provider.requests == [] and conn.execute("select count(*) from jobs").fetchone() == (0,)


@pytest.mark.parametrize(
    ("job_type", "to", "sender"),
    [
        ("send_sms", "+31612345678", "+15005550006"),
        ("send_whatsapp", "whatsapp:+31612345678", "whatsapp:+14155238886"),
    ],
)
def test_sms_and_whatsapp_jobs_post_twilio_forms(
    job_type: str,
    to: str,
    sender: str,
    database_url: str,
    conn: psycopg.Connection[Any],
    provider: Provider,
) -> None:
    job_id = crontick.enqueue(conn, job_type, {"to": "+31612345678", "body": "Your code is 1234"})
    run_jobs(database_url, conn, provider)
    [r] = provider.requests
    assert r.path == f"/2010-04-01/Accounts/{TWILIO_SID}/Messages.json"
    assert r.form == {"To": to, "From": sender, "Body": "Your code is 1234"}
    assert job(conn, job_id)["status"] == "done"


def test_an_sms_job_that_times_out_fails_at_once_instead_of_risking_a_second_sms(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    provider.behave = slow(0.8)
    job_id = crontick.enqueue(conn, "send_sms", {"to": "+31612345678", "body": "Hi"})
    run_jobs(database_url, conn, provider)
    row = job(conn, job_id)
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert "ReadTimeout" in row["last_error"] and "Twilio takes no idempotency key" in row["last_error"]


def test_an_email_job_that_times_out_is_retried_under_its_idempotency_key(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    provider.behave = slow(0.8)
    job_id = crontick.enqueue(conn, "send_email", {"to": "a@example.com", "subject": "S", "text": "T"})
    run_jobs(database_url, conn, provider)
    row = job(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1) and "ReadTimeout" in row["last_error"]


def test_a_missing_credential_fails_the_job_naming_the_variable(
    database_url: str,
    conn: psycopg.Connection[Any],
    provider: Provider,
) -> None:
    job_id = crontick.enqueue(conn, "send_email", {"to": "a@example.com", "subject": "S", "text": "T"})
    run_jobs(database_url, conn, provider, email_api_key=None)
    row = job(conn, job_id)
    assert row["status"] == "failed" and provider.requests == []
    assert row["last_error"].startswith("PermanentError: send_email: RESEND_API_KEY: expected your email API key")


@pytest.mark.parametrize(
    "payload", [{"to": "a@example.com", "subject": "S"}, {"subject": "S", "text": "T"}, ["a@example.com"]]
)
def test_a_malformed_email_payload_fails_at_once(
    payload: Any, database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    job_id = crontick.enqueue(conn, "send_email", payload)
    run_jobs(database_url, conn, provider)
    row = job(conn, job_id)
    assert row["status"] == "failed" and row["last_error"].startswith("PayloadError: send_email: expected payload {")
    assert provider.requests == []


def webhook_job(conn: psycopg.Connection[Any], url: str) -> int:
    return int(crontick.enqueue(conn, "webhook", {"url": url, "json": {"event": "signup", "user": 42}}))


def test_webhook_job_posts_json_and_succeeds_on_2xx(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    job_id = webhook_job(conn, provider.url + "/hook")
    run_jobs(database_url, conn, provider)
    [r] = provider.requests
    assert (r.path, r.json) == ("/hook", {"event": "signup", "user": 42})
    assert r.headers["idempotency-key"] == r.headers["webhook-id"] != f"job:{job_id}"
    assert job(conn, job_id)["status"] == "done"


def test_webhook_job_4xx_fails_at_once_with_status_and_the_first_500_bytes(
    database_url: str, conn: psycopg.Connection[Any], provider: Provider
) -> None:
    provider.behave = lambda r, n: Response("no such hook " + "x" * 600, 404)
    job_id = webhook_job(conn, provider.url + "/hook?token=s3cret")
    run_jobs(database_url, conn, provider)
    row = job(conn, job_id)
    assert row["status"] == "failed"
    assert (
        row["last_error"] == f"PermanentError: webhook {provider.url}/hook answered HTTP 404: no such hook " + "x" * 487
    )
    assert "s3cret" not in row["last_error"]


@pytest.mark.parametrize("answer", ["503", "429", "408", "timeout", "refused"])
def test_webhook_job_retries_on_408_429_5xx_timeouts_and_refused_connections(
    answer: str,
    database_url: str,
    conn: psycopg.Connection[Any],
    provider: Provider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def behave(r: Received, n: int) -> Response:
        if answer == "timeout":
            time.sleep(1.2)
            return Response(status=204)
        return Response("later", int(answer))

    provider.behave = behave
    monkeypatch.setattr(builtin.client, "DEFAULT_TIMEOUT", 0.3)
    url = f"http://127.0.0.1:{free_port()}/hook" if answer == "refused" else provider.url + "/hook"
    job_id = webhook_job(conn, url)
    run_jobs(database_url, conn, provider)
    row = job(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert row["run_after"] > row["updated_at"] + timedelta(seconds=40)
    assert row["last_error"]


def test_job_type_names_are_registered() -> None:
    from crontick.jobs import registry

    assert {"webhook", "send_email", "send_sms", "send_whatsapp"} <= set(registry.registered_types())
