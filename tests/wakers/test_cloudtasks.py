"""CRONTICK_WAKER=cloudtasks: the named task as Cloud Tasks' REST API takes it, a repeat's 409 ALREADY_EXISTS
counted as booked, the metadata server's access token fetched once, and (slow) the task delivered by
gcloud-tasks-emulator at its scheduleTime to a real crontick app, which accepts its Google OIDC token."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from crontick.app import create_app
from crontick.settings import Settings
from crontick.wakers import cloudtasks
from crontick.wakers.booking import book_next
from crontick.wakers.cloudtasks import CloudTasks
from tests.support.cloudtasks_front import QUEUE, cloudtasks_front, emulator
from tests.support.credentials import JWKS_PATH, OidcIssuer
from tests.support.servers import free_port, serve

ACCOUNT = "crontick-tasks@octo-project.iam.gserviceaccount.com"


def _settings(front_url: str, public_url: str, issuer: OidcIssuer, database_url: str | None = None) -> Settings:
    project, _, location, _, queue = QUEUE.split("/")[1:]
    return Settings(database_url=database_url, waker="cloudtasks", public_url=public_url,
                    cloudtasks_project=project, cloudtasks_location=location, cloudtasks_queue=queue,
                    cloudtasks_service_account=ACCOUNT, cloudtasks_url=front_url, gcp_metadata_url=front_url,
                    google_oidc_emails=(ACCOUNT,), google_oidc_audience=public_url + "/api/cron/tick",
                    google_oidc_issuer=issuer.url, google_oidc_jwks_url=issuer.url + JWKS_PATH)  # fmt: skip


def test_the_task_is_named_by_its_instant_and_a_repeat_is_already_booked(issuer: OidcIssuer) -> None:
    cloudtasks._tokens.clear()
    with cloudtasks_front(issuer) as front:
        provider = CloudTasks(_settings(front.url, "https://app.example.com", issuer))
        instant = datetime(2031, 1, 1, 9, 0, 5, tzinfo=UTC)
        first = asyncio.run(provider.book(instant, "crontick-abc-20310101T090005Z", datetime.now(UTC)))
        again = asyncio.run(provider.book(instant, "crontick-abc-20310101T090005Z", datetime.now(UTC)))
    assert not first.duplicate and first.message_id == f"{QUEUE}/tasks/crontick-abc-20310101T090005Z"
    assert again.duplicate
    (task,) = front.created
    assert task["scheduleTime"] == "2031-01-01T09:00:05Z"
    request = task["httpRequest"]
    assert request["url"] == "https://app.example.com/api/cron/tick" and request["httpMethod"] == "POST"
    assert request["oidcToken"] == {"serviceAccountEmail": ACCOUNT, "audience": "https://app.example.com/api/cron/tick"}
    assert json.loads(base64.b64decode(request["body"]))["crontick"] == "tick"
    assert front.token_fetches == 1  # the access token is kept


def test_a_refused_access_token_is_a_failed_booking(issuer: OidcIssuer, database_url: str) -> None:
    cloudtasks._tokens.clear()
    with cloudtasks_front(issuer) as front:
        settings = _settings(front.url, "https://app.example.com", issuer, database_url)
        settings = dataclasses.replace(settings, gcp_metadata_url=front.url + "/nowhere")
        now = datetime.now(UTC)

        async def booking() -> Any:
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
                return await book_next(conn, settings, now + timedelta(minutes=5), now)

        outcome = asyncio.run(booking())
    assert outcome.status == "failed" and "metadata server" in (outcome.error or "") and front.created == []


def test_a_cancel_deletes_the_task_and_its_name_stays_refused(issuer: OidcIssuer) -> None:
    """DeleteTask as Cloud Tasks documents it; 404 (gone already) is no failure; the deleted name is refused (409)
    afterwards, which crontick.wakers.booking's generation key steps around."""
    cloudtasks._tokens.clear()
    with cloudtasks_front(issuer) as front:
        provider = CloudTasks(_settings(front.url, "https://app.example.com", issuer))
        instant = datetime(2031, 1, 1, 9, 0, 5, tzinfo=UTC)
        asyncio.run(provider.book(instant, "crontick-abc-20310101T090005Z", datetime.now(UTC)))
        asyncio.run(provider.cancel("crontick-abc-20310101T090005Z", None))
        asyncio.run(provider.cancel("crontick-abc-20310101T090005Z", None))  # 404 now: no failure
        again = asyncio.run(provider.book(instant, "crontick-abc-20310101T090005Z", datetime.now(UTC)))
        other = asyncio.run(provider.book(instant, "crontick-abc-g2-20310101T090005Z", datetime.now(UTC)))
    assert front.deleted == [f"{QUEUE}/tasks/crontick-abc-20310101T090005Z"]
    assert again.duplicate and not other.duplicate


def test_a_superseded_task_is_deleted_by_the_next_booking(issuer: OidcIssuer, database_url: str) -> None:
    cloudtasks._tokens.clear()
    with cloudtasks_front(issuer) as front:
        settings = _settings(front.url, "https://app.example.com", issuer, database_url)

        async def booking(due: datetime, now: datetime) -> Any:
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
                return await book_next(conn, settings, due, now)

        now = datetime.now(UTC)
        first = asyncio.run(booking(now + timedelta(minutes=5), now))
        second = asyncio.run(booking(now + timedelta(minutes=9), now))
    assert (first.status, second.status) == ("booked", "booked")
    assert front.deleted == [first.message_id]
    assert [t["name"] for t in front.created] == [first.message_id, second.message_id]


@pytest.mark.slow
def test_the_task_arrives_at_its_instant_and_the_tick_accepts_its_token(
    issuer: OidcIssuer, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    cloudtasks._tokens.clear()
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"
    with emulator() as tasks_client, cloudtasks_front(issuer, tasks_client) as front:
        settings = _settings(front.url, public_url, issuer, database_url)
        with serve(create_app(settings), port=port):
            now = datetime.now(UTC)

            async def booking() -> Any:
                async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
                    return await book_next(aconn, settings, now + timedelta(seconds=2), now)

            outcome = asyncio.run(booking())
            assert outcome.status == "booked", outcome
            deadline = time.monotonic() + 30
            row = None
            while time.monotonic() < deadline and row is None:
                row = conn.execute("select started_at from crontick.crontick_ticks order by id desc limit 1").fetchone()
                time.sleep(0.2)
            assert row is not None, "the task never ran a tick"
            assert outcome.instant <= row[0] < outcome.instant + timedelta(seconds=5)
