"""AWS Lambda: crontick.aws.handler fed the events AWS sends, several in a row in one warm process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from crontick import aws
from crontick.errors import ConfigError
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.noop_jobs import BATCH_SIZE, counts, seed

EVENTS = ROOT / "tests" / "deploy" / "events"  # the events AWS sends, shared with the admin's Lambda tests


def event(name: str, secret: str = TEST_SECRET) -> dict[str, Any]:
    """A sample event in the shape AWS documents, with our secret where a caller would put its own."""
    return json.loads((EVENTS / f"{name}.json").read_text().replace("${CRON_SECRET}", secret))


class LambdaContext:
    """The attributes of the context object Lambda's Python runtime passes to a handler."""

    function_name = "crontick"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:crontick"
    memory_limit_in_mb = 512
    aws_request_id = "6f1c0b9e-3a4d-4e8b-9f7a-2c1d0e9b8a7f"
    log_group_name = "/aws/lambda/crontick"
    log_stream_name = "2026/03/13/[$LATEST]0123456789abcdef"

    def __init__(self, remaining_ms: int = 60_000) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@pytest.fixture
def lambda_env(host_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Lambda's environment variables, and a cold instance (its own runtime) for this test."""
    runtime = aws.LambdaRuntime()
    monkeypatch.setattr(aws, "_runtime", runtime)
    yield
    runtime.close()


def _app_connections(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "select count(*) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()"
        " and backend_type = 'client backend'"
    ).fetchone()
    return int(row[0]) if row else 0


def _http_summary(response: dict[str, Any]) -> dict[str, Any]:
    assert response["statusCode"] == 200, response
    summary: dict[str, Any] = json.loads(response["body"])
    return summary


def test_http_and_schedule_events_in_a_row_reuse_one_connection(
    lambda_env: None, conn: psycopg.Connection[Any]
) -> None:
    seed(conn, 2 * BATCH_SIZE + 2)
    first = _http_summary(aws.handler(event("function_url"), LambdaContext()))
    assert (first["jobs"]["succeeded"], first["more"]) == (BATCH_SIZE, True)
    second = _http_summary(aws.handler(event("api_gateway_v1"), LambdaContext()))
    assert (second["jobs"]["succeeded"], second["more"]) == (BATCH_SIZE, True)
    third = _http_summary(aws.handler(event("http_api_v2"), LambdaContext()))
    assert (third["jobs"]["succeeded"], third["more"]) == (2, False)
    assert _app_connections(conn) == 1

    # A schedule event: no token (IAM authenticated the caller); ticks until done while time remains.
    seed(conn, 2 * BATCH_SIZE + 2)
    scheduled = aws.handler(event("scheduler"), LambdaContext(remaining_ms=60_000))
    assert (scheduled["jobs"]["succeeded"], scheduled["more"]) == (2 * BATCH_SIZE + 2, False)
    rule = aws.handler(event("eventbridge_rule"), LambdaContext())
    assert (rule["jobs"]["claimed"], rule["more"]) == (0, False)

    # HTTP again after the schedule path: the same loop and connection still serve it.
    refused = aws.handler(event("function_url", secret="not-the-secret-" + "z" * 32), LambdaContext())
    assert refused["statusCode"] == 401
    assert json.loads(refused["body"])["error"] == "unauthorized"
    again = _http_summary(aws.handler(event("api_gateway_v1"), LambdaContext()))
    assert again["jobs"]["claimed"] == 0
    assert _app_connections(conn) == 1
    # The drain's ticks: three batches, then the probe that finds nothing left (it ends on a probed tick).
    assert counts(conn) == {"done": 4 * BATCH_SIZE + 4, "ticks": 3 + (3 + 1) + 1 + 1}


def test_a_short_invocation_runs_one_tick_and_leaves_the_rest(lambda_env: None, conn: psycopg.Connection[Any]) -> None:
    seed(conn, 2 * BATCH_SIZE)
    # 10 s left: one 8-second budget fits with the margin, a second does not.
    result = aws.handler(event("scheduler"), LambdaContext(remaining_ms=10_000))
    assert (result["jobs"]["succeeded"], result["more"]) == (BATCH_SIZE, True)
    assert aws.handler({"crontick": "tick"}, None)["jobs"]["succeeded"] == BATCH_SIZE


def test_schedule_events_need_no_auth_setting_but_http_does(
    lambda_env: None, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CRON_SECRET")
    seed(conn, 1)
    assert aws.handler(event("eventbridge_rule"), LambdaContext())["jobs"]["succeeded"] == 1
    unconfigured = aws.handler(event("function_url"), LambdaContext())
    assert unconfigured["statusCode"] == 503
    assert json.loads(unconfigured["body"])["error"] == "auth_not_configured"


@pytest.mark.parametrize(
    ("incoming", "shape"),
    [
        (event("s3_put"), "an object with keys ['Records']"),
        ({}, "an empty object"),
        ([{"crontick": "tick"}], "a list"),
        (
            {"requestContext": {"accountId": "123456789012"}, "body": "x"},
            "an object with keys ['body', 'requestContext']",
        ),
        (
            {"detail-type": "Object Created", "source": "aws.s3", "detail": {}},
            "an object with keys ['detail', 'detail-type', 'source']",
        ),
    ],
)
def test_any_other_event_gets_a_clear_error(lambda_env: None, incoming: Any, shape: str) -> None:
    with pytest.raises(aws.UnsupportedEvent) as raised:
        aws.handler(incoming, LambdaContext())
    message = str(raised.value)
    assert message.startswith("crontick.aws.handler: expected an HTTP event")
    assert message.endswith(f"got: {shape}")


def test_a_schedule_event_without_a_database_url_says_what_is_missing(
    lambda_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABASE_URL")
    with pytest.raises(ConfigError, match="DATABASE_URL: expected a PostgreSQL URL"):
        aws.handler(event("scheduler"), LambdaContext())


def test_an_eventbridge_wakeup_is_served_once(
    lambda_env: None, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-time schedule's Input names its instant (crontick.wakers.eventbridge): the first invocation ticks and
    records it served; a second one for that instant (a retry of the invocation) is answered without a tick."""
    for name, value in {"CRONTICK_WAKER": "eventbridge", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                        "AWS_SECRET_ACCESS_KEY": "secret", "CRONTICK_EVENTBRIDGE_URL": "http://127.0.0.1:9",
                        "CRONTICK_EVENTBRIDGE_TARGET_ARN": LambdaContext.invoked_function_arn,
                        "CRONTICK_EVENTBRIDGE_ROLE_ARN": "arn:aws:iam::123456789012:role/s"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    instant = "2026-12-05T09:00:00+00:00"
    conn.execute("insert into crontick.crontick_wakeups (instant, provider) values (%s, 'eventbridge')", (instant,))
    seed(conn, 1)
    first = aws.handler({"crontick": "tick", "instant": instant}, LambdaContext())
    again = aws.handler({"crontick": "tick", "instant": instant}, LambdaContext())
    assert first["jobs"]["succeeded"] == 1 and first["delivery"] == {"instant": instant, "duplicate": False,
                                                                      "served_at": None}  # fmt: skip
    assert again["jobs"]["claimed"] == 0 and again["delivery"]["duplicate"] is True
    assert conn.execute("select served_at is not null from crontick.crontick_wakeups").fetchone() == (True,)
