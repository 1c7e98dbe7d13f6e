"""POST /api/hooks/{name} over real HTTP: verify, record and enqueue in one statement, dedupe forever, fail closed."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import psycopg
import pytest
import standardwebhooks

import crontick
from crontick.errors import ConfigError
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import tick
from tests.support.hooks import (
    BEARER_SECRET,
    GITHUB_SECRET,
    STANDARD_SECRET,
    runs,
    settings_for,
    stripe_headers,
    twilio_form,
    twilio_post,
)
from tests.support.http_checks import LiveApp, assert_json_error
from tests.support.logs import LogLines
from tests.support.servers import free_port
from tests.support.tcp_proxy import TcpProxy


def jobs(conn: psycopg.Connection[Any]) -> list[tuple[int, str, Any, str]]:
    return conn.execute("select id, type, payload, status from jobs order by id").fetchall()


def events(conn: psycopg.Connection[Any]) -> list[tuple[str, str, int]]:
    return conn.execute("select hook, event_id, job_id from crontick_inbound_events order by job_id").fetchall()


def test_twilio_event_becomes_one_job_and_a_redelivery_after_it_ran_enqueues_nothing(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    runs.clear()
    form = {**twilio_form("SMaaa"), "MediaUrl0": "https://x/1"}
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        first = twilio_post(client, base, form)
        assert first.status_code == 200, first.text
        assert first.headers["content-type"].startswith("text/xml") and first.text == "<Response></Response>"
        [(job_id, job_type, payload, status)] = jobs(conn)
        assert (job_type, status) == ("t_inbound.record", "pending")
        assert payload["hook"] == "t-twilio" and payload["event_id"] == "SMaaa" and payload["event"] == form
        assert payload["received_at"].endswith("+00:00")
        assert events(conn) == [("t-twilio", "SMaaa", job_id)]
        assert tick(database_url).jobs.succeeded == 1
        assert [r[0] for r in runs] == [job_id]
        # Twilio does not retry, but a proxy or a replay may: days later, after the job is done.
        conn.execute("update crontick_inbound_events set received_at = received_at - interval '3 days'")
        again = twilio_post(client, base, form)
        assert again.status_code == 200 and again.text == "<Response></Response>"
    assert [(j[0], j[3]) for j in jobs(conn)] == [(job_id, "done")]
    assert tick(database_url).jobs.claimed == 0


def test_json_providers_answer_with_the_job_id_and_dedupe_on_their_event_id(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    import hashlib
    import hmac
    from datetime import UTC, datetime

    stripe_body = json.dumps({"id": "evt_1", "type": "invoice.paid"}).encode()
    gh_body = b'{"zen": "Keep it logically awesome."}'
    gh_sig = "sha256=" + hmac.new(GITHUB_SECRET.encode(), gh_body, hashlib.sha256).hexdigest()
    sw_body = '{"type": "user.created"}'
    sw_sig = standardwebhooks.Webhook(STANDARD_SECRET).sign("msg_1", datetime.now(UTC), sw_body)
    sw_headers = {"webhook-id": "msg_1", "webhook-timestamp": str(int(time.time())), "webhook-signature": sw_sig}
    bearer = {"Authorization": f"Bearer {BEARER_SECRET}"}
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as c:
        answers = {}
        for _ in range(2):
            answers["stripe"] = c.post(
                base + "/api/hooks/t-stripe", content=stripe_body, headers=stripe_headers(stripe_body)
            )
            answers["github"] = c.post(
                base + "/api/hooks/t-github",
                content=gh_body,
                headers={"X-Hub-Signature-256": gh_sig, "X-GitHub-Delivery": "d-1"},
            )
            answers["standard"] = c.post(base + "/api/hooks/t-standard", content=sw_body, headers=sw_headers)
            answers["bearer-keyed"] = c.post(
                base + "/api/hooks/t-bearer", json={"n": 1}, headers={**bearer, "Idempotency-Key": "k1"}
            )
            answers["bearer"] = c.post(base + "/api/hooks/t-bearer", json={"n": 2}, headers=bearer)
    for name, response in answers.items():
        assert response.status_code == 200, (name, response.text)
        assert response.json()["ok"] is True and isinstance(response.json()["job_id"], int)
        assert response.json()["duplicate"] is (name != "bearer"), name  # a bearer event without a key is not deduped
    rows = jobs(conn)
    assert len(rows) == 6  # four deduplicated events once each, the unkeyed bearer event twice
    by_event = {(p["hook"], p["event_id"]): p for _, _, p, _ in rows}
    assert by_event[("t-stripe", "evt_1")]["event"] == {"id": "evt_1", "type": "invoice.paid"}
    assert by_event[("t-github", "d-1")]["event"] == {"zen": "Keep it logically awesome."}
    assert by_event[("t-standard", "msg_1")]["event"] == {"type": "user.created"}
    assert by_event[("t-bearer", "k1")]["event"] == {"n": 1}
    assert sorted(e[:2] for e in events(conn)) == [
        ("t-bearer", "k1"),
        ("t-github", "d-1"),
        ("t-standard", "msg_1"),
        ("t-stripe", "evt_1"),
    ]


def test_refusals_are_json_and_write_nothing(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    from urllib.parse import urlencode

    stale_body = b'{"id": "evt_2"}'
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as c:
        wrong = twilio_post(c, base, twilio_form("SMbad"), token="not-the-token-000000000000000000")
        unsigned = c.post(
            base + "/api/hooks/t-twilio",
            content=urlencode(twilio_form("SMx")),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        stale = c.post(
            base + "/api/hooks/t-stripe",
            content=stale_body,
            headers=stripe_headers(stale_body, at=int(time.time()) - 400),
        )
        unknown = c.post(base + "/api/hooks/nope", content=b"{}")
        get = c.get(base + "/api/hooks/t-stripe")
        big = c.post(
            base + "/api/hooks/t-bearer",
            content=b"x" * (1024 * 1024 + 1),
            headers={"Authorization": f"Bearer {BEARER_SECRET}"},
        )

        def chunks() -> Any:  # no Content-Length: the cap must hold while streaming
            for _ in range(40):
                yield b"y" * 65536

        streamed = c.post(
            base + "/api/hooks/t-bearer", content=chunks(), headers={"Authorization": f"Bearer {BEARER_SECRET}"}
        )
        not_json = c.post(
            base + "/api/hooks/t-bearer", content=b"{nope", headers={"Authorization": f"Bearer {BEARER_SECRET}"}
        )
    for response in (wrong, unsigned, stale):
        body = assert_json_error(response, 401, "unauthorized")
        assert "match" not in body["detail"]  # the reason goes to the log only
    assert_json_error(unknown, 404, "unknown_hook")
    assert_json_error(get, 405, "method_not_allowed")
    assert_json_error(big, 413, "body_too_large")
    assert_json_error(streamed, 413, "body_too_large")
    assert_json_error(not_json, 400, "bad_event")
    assert jobs(conn) == [] and events(conn) == []


def test_database_outage_is_503_with_retry_after_and_nothing_half_written(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    proxy = TcpProxy(database_url)
    proxy.start()
    try:
        with live_app(settings_for(proxy.conninfo, kick="off")) as base, httpx.Client() as c:
            assert twilio_post(c, base, twilio_form("SM1")).status_code == 200  # the app now holds a connection
            proxy.stop()
            dropped = twilio_post(c, base, twilio_form("SM2"))
            refused = twilio_post(c, base, twilio_form("SM2"))
            proxy.start()
            back = twilio_post(c, base, twilio_form("SM2"))
    finally:
        proxy.stop()
    for response in (dropped, refused):
        assert_json_error(response, 503, "database_unavailable")
        assert int(response.headers["Retry-After"]) > 0
    assert back.status_code == 200
    assert [p["event_id"] for _, _, p, _ in jobs(conn)] == ["SM1", "SM2"]
    assert [e[1] for e in events(conn)] == ["SM1", "SM2"]
    assert conn.execute(
        "select count(*) from jobs j where not exists (select 1 from crontick_inbound_events e where e.job_id = j.id)"
    ).fetchone() == (0,)


def test_unreachable_database_is_503(live_app: LiveApp) -> None:
    closed = f"postgresql://postgres@127.0.0.1:{free_port()}/crontick"
    with live_app(settings_for(closed)) as base, httpx.Client() as c:
        response = twilio_post(c, base, twilio_form("SM1"))
    assert_json_error(response, 503, "database_unavailable")


def test_declaration_fails_fast_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRIPE_WEBHOOK_SECRET", raising=False)
    with pytest.raises(ConfigError, match="STRIPE_WEBHOOK_SECRET"):
        crontick.inbound("t-missing", "x", verify="stripe")
    with pytest.raises(ConfigError, match="CRONTICK_HOOK_T_MISSING_SECRET"):
        crontick.inbound("t-missing", "x", verify="standard")
    monkeypatch.setenv("CRONTICK_HOOK_T_MISSING_SECRET", "short")
    with pytest.raises(ConfigError, match="at least 32"):
        crontick.inbound("t-missing", "x", verify="bearer")
    with pytest.raises(ConfigError, match="verify in"):
        crontick.inbound("t-missing", "x", verify="hmac")
    with pytest.raises(ConfigError, match="one declaration per hook"):
        crontick.inbound("t-twilio", "other.type", verify="twilio", secret="s")
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", "from-env")
    try:
        assert crontick.inbound("t-env", "x", verify="github").secret == "from-env"
    finally:
        from crontick.hooks.inbound import forget

        forget("t-env")


def test_a_hook_without_its_secret_fails_closed_at_startup(
    live_app: LiveApp,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    crontick_log: LogLines,  # noqa: F811 - the fixture imported above
) -> None:
    module = tmp_path / "hooks_without_secret.py"
    module.write_text("import crontick\ncrontick.inbound('t-nosecret', 'x', verify='stripe')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("STRIPE_WEBHOOK_SECRET", raising=False)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("CRON_SECRET", TEST_SECRET)
    monkeypatch.setenv("CRONTICK_HANDLERS", "hooks_without_secret")
    with live_app(None) as base, httpx.Client() as c:
        hook = c.post(
            base + "/api/hooks/t-nosecret", content=b'{"id": "evt_1"}', headers={"Stripe-Signature": "t=1,v1=00"}
        )
    body = assert_json_error(hook, 503, "misconfigured")
    # The caller may be anyone: the variable to set is named in the log, never in the answer.
    assert "STRIPE_WEBHOOK_SECRET" not in body["detail"]
    assert "STRIPE_WEBHOOK_SECRET" in crontick_log.text


def test_twilio_json_body_signed_through_body_sha256_over_http(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    import hashlib

    from twilio.request_validator import RequestValidator

    from tests.support.hooks import PUBLIC_URL, TWILIO_TOKEN

    body = json.dumps({"CallSid": "CA1", "Status": "completed"}).encode()
    path = "/api/hooks/t-twilio?bodySHA256=" + hashlib.sha256(body).hexdigest()
    signature = RequestValidator(TWILIO_TOKEN).compute_signature(PUBLIC_URL + path, {})
    headers = {"X-Twilio-Signature": signature, "Content-Type": "application/json"}
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as c:
        ok = c.post(base + path, content=body, headers=headers)
        tampered = c.post(base + path, content=body.replace(b"completed", b"failed"), headers=headers)
    assert ok.status_code == 200 and ok.text == "<Response></Response>"
    assert_json_error(tampered, 401, "unauthorized")
    [(_, _, payload, _)] = jobs(conn)
    assert payload["event_id"] == "CA1" and payload["event"] == {"CallSid": "CA1", "Status": "completed"}
