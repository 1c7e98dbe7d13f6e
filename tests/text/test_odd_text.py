"""Text from outside that PostgreSQL cannot hold (NUL, lone surrogates, megabytes) never fails a batch's record.

Through the real app over HTTP: the tick answers 200 and every job of the batch is recorded.
"""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
from pytest_httpserver import HTTPServer
from werkzeug import Response

import crontick
from crontick.text import LAST_ERROR_MAX_CHARS
from tests.support.core_jobs import job_row, settings_for
from tests.support.http_checks import AUTH, TICK, LiveApp

ODD_MESSAGE = "provider said \x00\x00 then \udc80 and " + "x" * 1_000_000


class OddMessage(Exception):
    """An exception whose text PostgreSQL cannot store as it is."""


class UnreadableMessage(Exception):
    def __str__(self) -> str:
        raise RuntimeError("a broken __str__")


@crontick.handler("t_odd.nul_surrogate_huge")
async def nul_surrogate_huge(payload: Any, job: crontick.Job) -> None:
    raise OddMessage(ODD_MESSAGE)


@crontick.handler("t_odd.nul_permanent")
def nul_permanent(payload: Any, job: crontick.Job) -> None:  # a sync handler: the thread path records it too
    raise crontick.PermanentError("expected \x00 nothing, got \ud800")


@crontick.handler("t_odd.unreadable")
async def unreadable(payload: Any, job: crontick.Job) -> None:
    raise UnreadableMessage()


@crontick.handler("t_odd.ok")
async def ok(payload: Any, job: crontick.Job) -> None:
    return None


def _tick(base: str) -> dict[str, Any]:
    response = httpx.post(base + TICK, headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_one_odd_job_never_fails_its_batch(live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]) -> None:
    odd = crontick.enqueue(conn, "t_odd.nul_surrogate_huge", {})
    permanent = crontick.enqueue(conn, "t_odd.nul_permanent", {})
    unreadable_id = crontick.enqueue(conn, "t_odd.unreadable", {})
    fine = [crontick.enqueue(conn, "t_odd.ok", {"n": n}) for n in range(3)]
    with live_app(settings_for(database_url, webhook_deny_private=False)) as base:
        summary = _tick(base)
    assert summary["jobs"] | {"claimed": 6, "succeeded": 3, "retried": 2, "failed": 1} == summary["jobs"]
    assert [job_row(conn, j)["status"] for j in fine] == ["done"] * 3

    row = job_row(conn, odd)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    expected = "OddMessage: provider said \ufffd\ufffd then \ufffd and "
    assert row["last_error"].startswith(expected) and row["last_error"].endswith("x…")
    assert len(row["last_error"]) == LAST_ERROR_MAX_CHARS

    row = job_row(conn, permanent)
    assert (row["status"], row["last_error"]) == ("failed", "PermanentError: expected \ufffd nothing, got \ufffd")
    row = job_row(conn, unreadable_id)
    assert (row["status"], row["last_error"]) == ("pending", "UnreadableMessage: (its message could not be read)")

    history = dict(conn.execute("select job_id, error from job_attempts").fetchall())
    assert history[odd].startswith(expected) and history[permanent].endswith("got \ufffd")
    [alert] = conn.execute("select body->>'error' from crontick_alerts where event = 'job_failed'").fetchall()
    assert alert == ("PermanentError: expected \ufffd nothing, got \ufffd",)


def test_a_webhook_receiver_answering_500_with_nul_bytes(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer
) -> None:
    """The review's case: 100 plain NUL bytes in an error body made the record statement fail, the tick
    answer 500 and the job stay `running` until its lease expired."""
    httpserver.expect_request("/hook").respond_with_response(Response(b"\x00" * 100, 500))
    hook = httpserver.url_for("/hook")
    job_id = crontick.enqueue(conn, "webhook", {"url": hook, "json": {"order": 7}})
    fine = crontick.enqueue(conn, "t_odd.ok", {})
    with live_app(settings_for(database_url, webhook_deny_private=False)) as base:
        summary = _tick(base)
    assert (summary["jobs"]["succeeded"], summary["jobs"]["retried"]) == (1, 1)
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert row["last_error"] == f"DeliveryFailed: webhook {hook} answered HTTP 500: " + "\ufffd" * 100
    assert job_row(conn, fine)["status"] == "done"
