"""The inbound hook keeps the sender's trace context (its request's `traceparent` header) with the job it enqueues,
only while the app traces and only a well-formed header (a sender's header is outside text); over real HTTP."""

from __future__ import annotations

import sys
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick import tracing
from tests.support.hooks import BEARER_SECRET, settings_for
from tests.support.http_checks import LiveApp

VALID = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
BEARER = {"Authorization": f"Bearer {BEARER_SECRET}"}

crontick.inbound("t-traced", "t_tphook.noop", verify="bearer", secret=BEARER_SECRET)
crontick.inbound("t-traced-flow", "t_tphook.noop", verify="bearer", secret=BEARER_SECRET, group_key="conv:{n}")


@crontick.handler("t_tphook.noop")
def noop(payload: Any, job: crontick.Job) -> None:
    return None


def _post(base: str, hook: str, n: int, key: str | None, traceparent: str) -> int:
    headers = {**BEARER, "traceparent": traceparent, **({"Idempotency-Key": key} if key else {})}
    response = httpx.post(f"{base}/api/hooks/{hook}", json={"n": n}, headers=headers)
    assert response.status_code == 200, response.text
    return int(response.json()["job_id"])


def _kept(conn: psycopg.Connection[Any], job_id: int) -> Any:
    return conn.execute("select traceparent from crontick.jobs where id = %(id)s", {"id": job_id}).fetchone()


def test_each_hook_path_keeps_a_well_formed_traceparent_header_while_the_app_traces(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], spans: Any
) -> None:
    with live_app(settings_for(database_url)) as base:
        keyed = _post(base, "t-traced", 1, "e-1", VALID)  # recorded with the event, in one statement
        unkeyed = _post(base, "t-traced", 2, None, VALID)  # crontick.enqueue
        flow = _post(base, "t-traced-flow", 3, "e-3", VALID)  # crontick.enqueue inside the event's record
        unflowed_key = _post(base, "t-traced-flow", 4, None, VALID)
        bad = [_post(base, "t-traced", 10 + i, f"bad-{i}", text) for i, text in enumerate(_MALFORMED)]
        bad.append(_post(base, "t-traced-flow", 20, "bad-flow", VALID.upper()))
    for job_id in (keyed, unkeyed, flow, unflowed_key):
        assert _kept(conn, job_id) == (VALID,), job_id
    assert [_kept(conn, job_id) for job_id in bad] == [(None,)] * len(bad)


_MALFORMED = [VALID.upper(), VALID + "0" * 200, "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "a" * 55, VALID[:52]]


def test_the_header_is_ignored_when_the_app_does_not_trace(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "opentelemetry.trace", raising=False)
    monkeypatch.setattr(tracing, "_tracer", None)
    with live_app(settings_for(database_url)) as base:
        ids = [_post(base, "t-traced", 1, "e-1", VALID), _post(base, "t-traced-flow", 2, "e-2", VALID)]
    assert [_kept(conn, job_id) for job_id in ids] == [(None,), (None,)]
