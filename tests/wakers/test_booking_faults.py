"""Each provider's faults (issue 35, "Bad input and faults") through book_next, against a real local HTTP server that
answers as the provider would when it fails: a 5xx (retryable) and a 4xx (permanent) are failed bookings, recorded
and booked again by the next tick; no answer within CRONTICK_WAKEUP_TIMEOUT_SECONDS fails within the bound; a
booking for work already overdue is booked for now (a minute's lead for EventBridge, which refuses a past `at()`);
and the delivery targets the public URL or the topic, never the deployment that booked it (a redeploy in between
strands nothing). Their success paths run against each provider's own stand-in in its own test file."""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from crontick.settings import Settings
from crontick.wakers.booking import WakeupOutcome, book_next

PUBLIC_URL = "https://app.example.com"
PROVIDERS = ("qstash", "eventbridge", "cloudtasks", "vercel-queue")
# What each provider answers to a booking it accepts (its documented success).
ACCEPTED = {
    "qstash": (201, {"messageId": "msg_1"}),
    "eventbridge": (200, {"ScheduleArn": "arn:aws:scheduler:eu-west-1:123456789012:schedule/default/x"}),
    "cloudtasks": (200, {"name": "projects/p/locations/l/queues/q/tasks/x"}),
    "vercel-queue": (201, {"messageId": "msg_1"}),
}
BOOKING_PATH = re.compile(r"^/(v2/publish/|schedules/|v2/projects/|api/v3/topic/).*")
METADATA_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"


def _settings(provider: str, base: str, database_url: str, **changes: Any) -> Settings:
    per_provider: dict[str, dict[str, Any]] = {
        "qstash": {"qstash_token": "qstash-token", "qstash_url": base, "qstash_current_signing_key": "sig_current"},
        "eventbridge": {
            "aws_region": "eu-west-1", "aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret",
            "eventbridge_url": base, "eventbridge_target_arn": "arn:aws:lambda:eu-west-1:123456789012:function:app",
            "eventbridge_role_arn": "arn:aws:iam::123456789012:role/crontick-scheduler",
        },
        "cloudtasks": {
            "cloudtasks_project": "p", "cloudtasks_location": "l", "cloudtasks_queue": "q", "cloudtasks_url": base,
            "gcp_metadata_url": base, "cloudtasks_service_account": "tasks@p.iam.gserviceaccount.com",
            "google_oidc_emails": ("tasks@p.iam.gserviceaccount.com",), "google_oidc_audience": PUBLIC_URL,
        },
        "vercel-queue": {"vercel_queue_token": "queue-token", "vercel_queue_base_url": base},
    }  # fmt: skip
    return Settings(database_url=database_url, waker=provider, public_url=PUBLIC_URL, wakeup_timeout_seconds=0.3,
                    **per_provider[provider], **changes)  # fmt: skip


def _serve(httpserver: HTTPServer, answer: Callable[[Request], Response]) -> list[Request]:
    """The provider's endpoints on the local server: the metadata server's token (Cloud Tasks), and `answer` to every
    booking call, which is recorded."""
    seen: list[Request] = []

    def booking(request: Request) -> Response:
        request.get_data()
        seen.append(request)
        return answer(request)

    token = json.dumps({"access_token": "ya29.local", "expires_in": 3600, "token_type": "Bearer"})
    httpserver.expect_request(METADATA_PATH).respond_with_data(token, content_type="application/json")
    httpserver.expect_request(BOOKING_PATH, method="POST").respond_with_handler(booking)
    return seen


def _answer(status: int, body: dict[str, Any] | str) -> Callable[[Request], Response]:
    text = body if isinstance(body, str) else json.dumps(body)
    return lambda _: Response(text, status, content_type="application/json")


def _book(settings: Settings, due: datetime, now: datetime) -> WakeupOutcome:
    async def go() -> WakeupOutcome:
        async with await psycopg.AsyncConnection.connect(settings.database_url or "", autocommit=True) as conn:
            return await asyncio.wait_for(book_next(conn, settings, due, now), 10)

    return asyncio.run(go())


def _row(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    row = conn.execute("select status, attempts, error from crontick.crontick_wakeups").fetchone()
    assert row is not None
    return tuple(row)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("status", "retryable"), [(503, True), (403, False)])
def test_a_refusal_is_a_failed_booking_and_the_next_tick_books_again(
    httpserver: HTTPServer, database_url: str, conn: psycopg.Connection[Any], provider: str, status: int,
    retryable: bool,
) -> None:  # fmt: skip
    answers = [_answer(status, "provider trouble"), _answer(*ACCEPTED[provider])]
    seen = _serve(httpserver, lambda request: answers[min(len(seen) - 1, 1)](request))
    settings = _settings(provider, httpserver.url_for("").rstrip("/"), database_url)
    now = datetime.now(UTC).replace(microsecond=0)
    failed = _book(settings, now + timedelta(hours=1), now)
    assert failed.status == "failed" and failed.retryable is retryable and f"answered {status}" in (failed.error or "")
    assert _row(conn)[:2] == ("failed", 1)
    again = _book(settings, now + timedelta(hours=1), now + timedelta(seconds=5))
    assert again.status == "booked" and again.instant == failed.instant and again.attempt == 2
    assert _row(conn)[:2] == ("booked", 2) and len(seen) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_provider_that_does_not_answer_fails_within_the_timeout(
    httpserver: HTTPServer, database_url: str, conn: psycopg.Connection[Any], provider: str
) -> None:
    release, answered = threading.Event(), threading.Event()

    def stall(request: Request) -> Response:
        release.wait(10)  # past the 0.3 s timeout: the booking gives up long before
        answered.set()
        return _answer(*ACCEPTED[provider])(request)

    _serve(httpserver, stall)
    settings = _settings(provider, httpserver.url_for("").rstrip("/"), database_url)
    now = datetime.now(UTC)
    try:
        outcome = _book(settings, now + timedelta(hours=1), now)  # within asyncio.wait_for's bound
    finally:  # the local server answers one call at a time: let this one end before the next test's
        release.set()
        answered.wait(10)
    assert outcome.status == "failed" and outcome.retryable and "no answer within 0.3 s" in (outcome.error or "")
    assert _row(conn)[0] == "failed"


def _booked_for(provider: str, request: Request, now: datetime) -> datetime:
    """The instant the provider was asked to call at, read from the request as the provider reads it."""
    if provider == "qstash":
        return datetime.fromtimestamp(int(request.headers["Upstash-Not-Before"]), UTC)
    if provider == "vercel-queue":
        return now + timedelta(seconds=int(request.headers["Vqs-Delay-Seconds"]))
    body = json.loads(request.get_data())
    if provider == "cloudtasks":
        return datetime.fromisoformat(body["task"]["scheduleTime"])
    return datetime.fromisoformat(body["ScheduleExpression"][3:-1]).replace(tzinfo=UTC)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_booking_in_the_past_is_booked_for_now(httpserver: HTTPServer, database_url: str, provider: str) -> None:
    seen = _serve(httpserver, _answer(*ACCEPTED[provider]))
    settings = _settings(provider, httpserver.url_for("").rstrip("/"), database_url)
    now = datetime.now(UTC).replace(microsecond=0) + timedelta(milliseconds=400)
    outcome = _book(settings, now - timedelta(minutes=10), now)  # overdue work a slow safety net found
    (request,) = seen
    at_once = datetime.fromtimestamp(math.ceil(now.timestamp()), UTC)
    if provider == "eventbridge":  # a past at() is refused: the least lead, on the minute
        at_once = datetime.fromtimestamp(math.ceil((now + timedelta(seconds=10)).timestamp() / 60) * 60, UTC)
    assert outcome.status == "booked" and outcome.instant == at_once
    assert abs((_booked_for(provider, request, now) - at_once).total_seconds()) <= 1
    if provider == "vercel-queue":
        assert request.headers["Vqs-Delay-Seconds"] == "1"  # rounded up to the second, never negative


@pytest.mark.parametrize("provider", ["qstash", "vercel-queue", "cloudtasks"])
def test_the_delivery_targets_the_app_not_the_deployment_that_booked_it(
    httpserver: HTTPServer, database_url: str, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    """A redeploy between booking and delivery: what the provider calls is the public URL (or the topic every
    deployment's subscriber reads), even with Vercel's deployment variables set where the booking was made."""
    monkeypatch.setenv("VERCEL_DEPLOYMENT_ID", "dpl_booking_deployment")
    monkeypatch.setenv("VERCEL_URL", "app-abc123-team.vercel.app")
    seen = _serve(httpserver, _answer(*ACCEPTED[provider]))
    settings = _settings(provider, httpserver.url_for("").rstrip("/"), database_url)
    now = datetime.now(UTC)
    assert _book(settings, now + timedelta(hours=1), now).status == "booked"
    (request,) = seen
    assert "dpl_booking_deployment" not in str(request.headers) and "abc123" not in request.get_data(as_text=True)
    if provider == "qstash":
        assert request.path == f"/v2/publish/{PUBLIC_URL}/api/cron/tick"
    elif provider == "vercel-queue":
        assert "Vqs-Deployment-Id" not in request.headers and request.path == "/api/v3/topic/crontick-tick"
    else:
        assert json.loads(request.get_data())["task"]["httpRequest"]["url"] == f"{PUBLIC_URL}/api/cron/tick"
