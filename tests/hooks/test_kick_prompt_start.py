"""Prompt start over real HTTP, with no scheduled tick: from a webhook's 200 to its handler starting, per host."""

from __future__ import annotations

import asyncio
import base64
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from crontick import aws
from crontick.app import create_app
from crontick.hooks import kick
from tests.support.constants import TEST_SECRET
from tests.support.databases import url_of
from tests.support.hooks import runs, settings_for, twilio_form, twilio_post, twilio_request
from tests.support.logs import LogLines
from tests.support.servers import free_port, serve
from tests.support.waiting import wait_until

PROMPT_SECONDS = 2.0
EVENTS = 5


def report(name: str, latencies: list[float]) -> None:
    """One line per path for the closing note (pytest -s shows it; the log keeps it)."""
    print(
        f"\nprompt start [{name}]: n={len(latencies)} median={statistics.median(latencies) * 1000:.0f} ms "
        f"max={max(latencies) * 1000:.0f} ms",
        file=sys.stderr,
    )


def test_crontick_serve_starts_the_handler_within_two_seconds_of_the_200(
    served: tuple[str, Path], conn: psycopg.Connection[Any]
) -> None:
    base, log = served
    latencies = []
    with httpx.Client() as client:
        for n in range(EVENTS):
            response = twilio_post(client, base, twilio_form(f"SMserve{n}"), hook="wa")
            answered = time.time()
            assert response.status_code == 200 and response.text == "<Response></Response>"
            start = wait_until(lambda n=n: _started(log, f"SMserve{n}"), timeout=5)
            latencies.append(max(0.0, start - answered))
    report("crontick serve, inline", latencies)
    assert max(latencies) < PROMPT_SECONDS
    sources = [r[0] for r in conn.execute("select source from crontick_ticks").fetchall()]
    assert sources and set(sources) == {"kick"}  # nothing else ticked: no scheduler ran


def _started(log: Path, event_id: str) -> float | None:
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["event_id"] == event_id:
            return float(entry["started"])
    return None


def _run_started(job_id: int) -> float | None:
    return next((started for jid, _, started in list(runs) if jid == job_id), None)


def test_http_kick_calls_the_apps_own_tick_url_with_a_one_use_token(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    runs.clear()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    latencies = []
    with (
        serve(create_app(settings_for(database_url, kick="http", public_url=base)), port=port),
        httpx.Client() as client,
    ):
        for n in range(EVENTS):
            response = twilio_post(client, base, twilio_form(f"SMhttp{n}"), public_url=base)
            answered = time.monotonic()
            assert response.status_code == 200
            [(job_id,)] = conn.execute(
                "select job_id from crontick_inbound_events where event_id = %(e)s", {"e": f"SMhttp{n}"}
            ).fetchall()
            latencies.append(max(0.0, wait_until(lambda job_id=job_id: _run_started(job_id), timeout=5) - answered))
        # A job may start in the previous kick's follow-up tick (prompt start within the budget), and
        # kicks that arrive while one runs coalesce into one more round: wait until no kick is in
        # flight (and none starts for a while) before the server stops, or the last one fails.
        _wait_for_kicks_to_settle()
    report("http kick", latencies)
    assert max(latencies) < PROMPT_SECONDS
    ticks = conn.execute("select source from crontick_ticks").fetchall()
    assert ticks and {t[0] for t in ticks} == {"token"}  # each tick authorised by a signed token...
    tokens = _token_uses(conn)
    assert 1 <= tokens <= EVENTS  # ...at most one per kick (coalesced kicks share a round), each used once
    assert len(ticks) >= tokens  # a follow-up tick adds a row, not a token
    assert conn.execute("select count(*) from jobs where status = 'done'").fetchone() == (EVENTS,)


def _wait_for_kicks_to_settle(quiet: float = 1.0, timeout: float = 10.0) -> None:
    """Until no kick has been in flight for `quiet` seconds (longer than a round's spacing)."""
    deadline, idle_since = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        now = time.monotonic()
        if kick.coalescer.running:
            idle_since = None
        elif idle_since is None:
            idle_since = now
        elif now - idle_since >= quiet:
            return
        time.sleep(0.005)
    raise AssertionError("a kick was still in flight")


def _token_uses(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("select count(*) from crontick_token_uses").fetchone()
    assert row is not None
    return int(row[0])


def test_failed_http_kick_is_logged_and_leaves_the_work_for_the_scheduled_tick(
    database_url: str,
    conn: psycopg.Connection[Any],
    crontick_log: LogLines,  # noqa: F811
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"  # the public URL points at nothing
    with (
        serve(create_app(settings_for(database_url, kick="http", public_url=nowhere))) as base,
        httpx.Client() as client,
    ):
        response = twilio_post(client, base, twilio_form("SMlost"), public_url=nowhere)
        time.sleep(0.5)  # the kick runs after the answer; give it time to fail
    assert response.status_code == 200
    assert conn.execute("select status from jobs").fetchall() == [("pending",)]
    assert any('"event": "kick_failed"' in line for line in crontick_log.lines)


# --- AWS Lambda: the kick is a separate invocation, here through a local stand-in for the function URL ----


def function_url_event(method: str, path: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {k.lower(): v for k, v in headers.items()} | {"host": "fn.lambda-url.us-east-1.on.aws"},
        "requestContext": {
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "test",
            },
            "domainName": "fn.lambda-url.us-east-1.on.aws",
            "requestId": "r",
            "routeKey": "$default",
            "stage": "$default",
            "timeEpoch": 0,
        },
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


class FunctionUrlStandIn:
    """What a Lambda function URL does: turn each HTTP request into an event for a (second) warm instance."""

    def __init__(self) -> None:
        self.instance = aws.LambdaRuntime()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        event = function_url_event(scope["method"], scope["path"], body, headers)
        answer = await asyncio.to_thread(self.instance.handle, event, None)
        await send(
            {
                "type": "http.response.start",
                "status": answer["statusCode"],
                "headers": [(k.encode(), v.encode()) for k, v in answer.get("headers", {}).items()],
            }
        )
        await send({"type": "http.response.body", "body": answer.get("body", "").encode()})


def test_lambda_kicks_a_separate_invocation_through_its_own_url(
    database_url: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs.clear()
    stand_in = FunctionUrlStandIn()
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    for name, value in {
        "DATABASE_URL": url_of(database_url),
        "CRON_SECRET": TEST_SECRET,
        "AWS_LAMBDA_FUNCTION_NAME": "crontick",
        "CRONTICK_PUBLIC_URL": public,
        "CRONTICK_HANDLERS": "tests.support.hooks",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CRONTICK_KICK", raising=False)
    webhook_instance = aws.LambdaRuntime()
    latencies, answers = [], []
    try:
        with serve(stand_in, port=port):
            for n in range(EVENTS):
                path, body, headers = twilio_request(twilio_form(f"SMlambda{n}"), public_url=public)
                invoked = time.monotonic()
                answer = webhook_instance.handle(function_url_event("POST", path, body, headers), None)
                answers.append(time.monotonic() - invoked)
                assert answer["statusCode"] == 200 and answer["body"] == "<Response></Response>", answer
                [(job_id,)] = conn.execute(
                    "select job_id from crontick_inbound_events where event_id = %(e)s", {"e": f"SMlambda{n}"}
                ).fetchall()
                latencies.append(wait_until(lambda job_id=job_id: _run_started(job_id), timeout=5) - invoked)
    finally:
        webhook_instance.close()
        stand_in.instance.close()
    report("lambda, http kick via a second instance (from invocation)", latencies)
    report("lambda, webhook invocation duration", answers)
    assert max(latencies) < PROMPT_SECONDS
    assert webhook_instance.app().state.runtime.settings.kick == "http"  # chosen for Lambda without CRONTICK_KICK
    assert {t[0] for t in conn.execute("select source from crontick_ticks").fetchall()} == {"token"}


# --- Vercel: api/hooks/[name].py loaded by file path, as Vercel's runtime does; it waits for background work ----


def test_vercel_function_kicks_inline_after_the_response(
    database_url: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.vercel import load_vercel_function

    runs.clear()
    for name, value in {
        "DATABASE_URL": url_of(database_url),
        "CRON_SECRET": TEST_SECRET,
        "VERCEL": "1",
        "CRONTICK_PUBLIC_URL": "https://app.example.com",
        "CRONTICK_HANDLERS": "tests.support.hooks",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("CRONTICK_KICK", "AWS_LAMBDA_FUNCTION_NAME"):
        monkeypatch.delenv(name, raising=False)
    function = load_vercel_function("api/hooks/[name].py")
    monkeypatch.setattr(function.app, "_app", None)  # a cold instance
    latencies = []
    with serve(function.app) as base, httpx.Client() as client:
        for n in range(EVENTS):
            response = twilio_post(client, base, twilio_form(f"SMvercel{n}"))
            answered = time.monotonic()
            assert response.status_code == 200, response.text
            [(job_id,)] = conn.execute(
                "select job_id from crontick_inbound_events where event_id = %(e)s", {"e": f"SMvercel{n}"}
            ).fetchall()
            latencies.append(max(0.0, wait_until(lambda job_id=job_id: _run_started(job_id), timeout=5) - answered))
    report("vercel function, inline after the response", latencies)
    assert max(latencies) < PROMPT_SECONDS
    assert function.app._app.state.runtime.settings.kick == "inline"
    assert {t[0] for t in conn.execute("select source from crontick_ticks").fetchall()} == {"kick"}
