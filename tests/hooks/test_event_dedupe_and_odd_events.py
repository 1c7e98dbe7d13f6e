"""Hooks over real HTTP: dedupe on what the sender signed, 400 (never 500) for what cannot be stored, Twilio's URL."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx
import psycopg
import pytest

from tests.support.hooks import BEARER_SECRET, GITHUB_SECRET, settings_for, stripe_headers, twilio_post, twilio_request
from tests.support.http_checks import LiveApp, assert_json_error
from tests.support.logs import LogLines


def jobs(conn: psycopg.Connection[Any]) -> list[tuple[int, Any]]:
    return conn.execute("select id, payload from jobs order by id").fetchall()


def github_headers(body: bytes, delivery: str | None) -> dict[str, str]:
    signature = "sha256=" + hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Hub-Signature-256": signature, "Content-Type": "application/json", "X-GitHub-Event": "push"}
    return headers | ({"X-GitHub-Delivery": delivery} if delivery is not None else {})


def test_a_github_replay_under_a_new_or_no_delivery_id_enqueues_nothing(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    body = json.dumps({"ref": "refs/heads/main", "after": "abc123"}).encode()
    other = json.dumps({"ref": "refs/heads/main", "after": "def456"}).encode()
    hook = "/api/hooks/t-github"
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as c:
        first = c.post(base + hook, content=body, headers=github_headers(body, "d-1"))
        renamed = c.post(base + hook, content=body, headers=github_headers(body, "d-2"))  # a captured delivery
        unnamed = c.post(base + hook, content=body, headers=github_headers(body, None))
        same_id = c.post(base + hook, content=body, headers=github_headers(body, "d-1"))  # GitHub's own redelivery
        second = c.post(base + hook, content=other, headers=github_headers(other, "d-3"))
    assert first.status_code == 200 and first.json()["duplicate"] is False, first.text
    for response in (renamed, same_id):
        assert response.status_code == 200, response.text
        assert response.json() == {"ok": True, "job_id": first.json()["job_id"], "duplicate": True}
    detail = assert_json_error(unnamed, 400, "bad_event")["detail"]
    assert "X-GitHub-Delivery" in detail
    assert second.status_code == 200 and second.json()["duplicate"] is False
    rows = jobs(conn)
    assert [p["event_id"] for _, p in rows] == ["d-1", "d-3"]  # the handler still sees GitHub's delivery id
    assert rows[0][0] == first.json()["job_id"]
    stored = conn.execute("select event_id, body_sha256 from crontick_inbound_events order by event_id").fetchall()
    assert stored == [("d-1", hashlib.sha256(body).digest()), ("d-3", hashlib.sha256(other).digest())]


def test_a_twilio_event_without_a_sid_is_deduplicated_on_what_twilio_signed(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    form = {"AccountSid": "AC1", "EventType": "onMessageAdded", "Body": "hi"}  # neither MessageSid nor CallSid
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as c:
        path, body, headers = twilio_request(form)
        answers = [
            c.post(base + path, content=body, headers={**headers, "I-Twilio-Idempotency-Token": token})
            for token in ("tok-1", "tok-2", "")  # the token is not signed: a replay may choose any
        ]
        different = twilio_post(c, base, {**form, "Body": "hello"})
    assert all(a.status_code == 200 and a.text == "<Response></Response>" for a in answers + [different])
    rows = jobs(conn)
    assert len(rows) == 2, rows
    first, second = (p["event_id"] for _, p in rows)
    assert first.startswith("sha256:") and len(first) == 7 + 64 and first != second
    assert rows[0][1]["event"] == form


# Verified events that PostgreSQL's jsonb or Python's json cannot take; each used to answer 500,
# and Stripe retries a 500 for three days.
ODD_STRIPE_BODIES = {
    "nul-in-a-string": b'{"id": "evt_nul", "data": {"note": "a\\u0000b"}}',
    "nul-in-the-id": b'{"id": "evt_\\u0000", "type": "invoice.paid"}',
    "nul-in-a-key": b'{"id": "evt_key", "data": {"a\\u0000": 1}}',
    "unpaired-surrogate": b'{"id": "evt_sur", "data": {"note": "\\ud800"}}',
    "nan": b'{"id": "evt_nan", "amount": NaN}',
    "infinity": b'{"id": "evt_inf", "amount": 1e999}',
    "past-the-recursion-limit": b'{"id": "evt_deep", "data": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    "past-the-depth-limit": b'{"id": "evt_150", "data": ' + b"[" * 150 + b"]" * 150 + b"}",
}


@pytest.mark.parametrize("case", list(ODD_STRIPE_BODIES))
def test_a_verified_event_that_cannot_be_stored_answers_400_with_a_reason(
    case: str, live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    body = ODD_STRIPE_BODIES[case]
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as c:
        response = c.post(base + "/api/hooks/t-stripe", content=body, headers=stripe_headers(body))
        fine = json.dumps({"id": "evt_ok", "data": {"note": "a\u00e9b"}}).encode()
        after = c.post(base + "/api/hooks/t-stripe", content=fine, headers=stripe_headers(fine))
    detail = assert_json_error(response, 400, "bad_event")["detail"]
    assert detail.startswith("expected "), detail
    assert after.status_code == 200, after.text  # the server and its connection are fine
    assert [p["event_id"] for _, p in jobs(conn)] == ["evt_ok"]


def test_a_bearer_form_with_a_nul_or_bad_utf8_answers_400(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    headers = {"Authorization": f"Bearer {BEARER_SECRET}", "Content-Type": "application/x-www-form-urlencoded"}
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as c:
        nul = c.post(base + "/api/hooks/t-bearer", content=b"a=1%002", headers=headers)
        latin1 = c.post(base + "/api/hooks/t-bearer", content=b"a=\xe9", headers=headers)
    assert "NUL" in assert_json_error(nul, 400, "bad_event")["detail"]
    assert "UTF-8" in assert_json_error(latin1, 400, "bad_event")["detail"]
    assert jobs(conn) == []


def test_a_twilio_hook_checks_against_a_url_the_caller_chose_only_on_loopback(
    live_app: LiveApp,
    database_url: str,
    conn: psycopg.Connection[Any],
    crontick_log: LogLines,  # noqa: F811 - the fixture imported above
) -> None:
    form = {"MessageSid": "SMhost", "Body": "hi"}
    staging = "http://staging.example.com"  # as this app sees it: no proxy in front to say https
    with live_app(settings_for(database_url, kick="off", public_url=None)) as base, httpx.Client() as c:
        # Signed for staging, replayed here with staging's Host: it used to verify, and enqueue.
        path, body, headers = twilio_request(form, public_url=staging)
        replayed = c.post(base + path, content=body, headers={**headers, "Host": "staging.example.com"})
        local = twilio_post(c, base, {"MessageSid": "SMlocal"}, public_url=base)  # `crontick dev`: loopback
    body_503 = assert_json_error(replayed, 503, "misconfigured")
    assert "CRONTICK_PUBLIC_URL" not in body_503["detail"]  # the caller may be anyone: the setting is in the log
    assert "CRONTICK_PUBLIC_URL" in crontick_log.text
    assert local.status_code == 200, local.text
    assert [p["event_id"] for _, p in jobs(conn)] == ["SMlocal"]
    with live_app(settings_for(database_url, kick="off", public_url=staging)) as base, httpx.Client() as c:
        configured = c.post(base + path, content=body, headers=headers)
    assert configured.status_code == 200, configured.text


@pytest.mark.parametrize(
    ("public_url", "trust_forwarded", "client", "url", "trusted"),
    [
        ("https://app.example.com", False, "203.0.113.9", "https://app.example.com/api/hooks/w", True),
        (None, True, "203.0.113.9", "https://app.example.com/api/hooks/w", True),
        (None, False, "127.0.0.1", "http://127.0.0.1:8000/api/hooks/w", True),
        (None, False, "::1", "http://[::1]:8000/api/hooks/w", True),
        (None, False, "127.0.0.1", "http://localhost:8000/api/hooks/w", True),
        (None, False, "127.0.0.1", "https://app.example.com/api/hooks/w", False),  # a tunnel or a proxy: set the URL
        (None, False, "203.0.113.9", "http://127.0.0.1:8000/api/hooks/w", False),  # Host: 127.0.0.1 from outside
        (None, False, "", "http://127.0.0.1:8000/api/hooks/w", False),
    ],
)
def test_which_twilio_urls_are_trusted(
    public_url: str | None, trust_forwarded: bool, client: str, url: str, trusted: bool
) -> None:
    from crontick.hooks.endpoint import trusted_url
    from crontick.settings import Settings

    settings = Settings(public_url=public_url, trust_forwarded=trust_forwarded)
    assert trusted_url(settings, client, url) is trusted


def test_what_the_checks_miss_is_still_a_400_from_the_database(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from crontick.hooks import event

    monkeypatch.setattr(event, "check_storable", lambda value: None)  # as if a new kind of odd input got past
    body = ODD_STRIPE_BODIES["nul-in-a-string"]
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as c:
        response = c.post(base + "/api/hooks/t-stripe", content=body, headers=stripe_headers(body))
    assert "cannot store this event" in assert_json_error(response, 400, "bad_event")["detail"]
    assert jobs(conn) == [] and conn.execute("select count(*) from crontick_inbound_events").fetchone() == (0,)
