"""Every log line is one JSON object: attacker-chosen text (a token's kid, a job type) cannot forge fields."""

from __future__ import annotations

import json
import logging
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

import crontick
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.credentials import AUDIENCE, REPOSITORY, OidcIssuer
from tests.support.http_checks import assert_refused, bearer, tick
from tests.support.logs import JsonLineCheck, LogLines

FORGED = 'x", "event": "tick", "jobs": {"claimed": 999}, "y": "'
QUOTED_TYPE = 't_sec.quote" , "event": "tick'


@crontick.handler(QUOTED_TYPE)
async def quoted(payload: Any, job: crontick.Job) -> None:
    return None


def _events(log: LogLines) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.lines]


def test_the_suite_wide_check_catches_a_line_that_is_not_json(json_line_check: JsonLineCheck) -> None:
    """The autouse check would fail any test that logs like this (then this test removes its own line)."""
    seen = len(json_line_check.bad)
    logger = logging.getLogger("crontick")
    # What the code did before crontick.logs: a value pasted into JSON text, which forges "event".
    logger.warning('{"event": "tick_refused", "reason": "%s"}', FORGED)
    logger.error("plain text")
    logger.error('{"event": "two"}\n{"event": "lines"}')
    caught = json_line_check.bad[seen:]
    del json_line_check.bad[seen:]
    assert len(caught) == 3, caught


def test_a_kid_with_quotes_cannot_forge_a_tick_line(
    database_url: str, issuer: OidcIssuer, other_rsa_key: rsa.RSAPrivateKey, live_app: Any, crontick_log: LogLines
) -> None:
    settings = Settings(
        database_url=database_url,
        github_oidc_repository=REPOSITORY,
        github_oidc_audience=AUDIENCE,
        github_oidc_issuer=issuer.url,
    )
    with live_app(settings) as base:
        assert_refused(tick(base, headers=bearer(issuer.token(key=other_rsa_key, kid=FORGED))), base)
    events = _events(crontick_log)
    assert {e["event"] for e in events} == {"tick_refused"}  # (assert_refused adds a baseline refusal)
    assert any(FORGED[:40] in e["reason"] for e in events)  # the kid is there, as data inside the reason


def test_a_job_type_with_quotes_cannot_forge_a_tick_line(
    database_url: str,
    conn: psycopg.Connection[Any],
    live_app: Any,
    crontick_log: LogLines,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logging.getLogger("crontick"), "level", logging.INFO)  # so the tick line is kept too
    conn.execute("insert into jobs (type, payload) values (%s, '{}')", (QUOTED_TYPE,))
    # CRONTICK_SLOW_JOB_SECONDS=0: every job logs a slow_job line naming its type
    with live_app(Settings(database_url=database_url, cron_secret=TEST_SECRET, slow_job_seconds=0.0)) as base:
        response = tick(base, headers=bearer(TEST_SECRET))
        assert response.json()["jobs"]["succeeded"] == 1, response.text
    events = _events(crontick_log)
    assert sorted(e["event"] for e in events) == ["slow_job", "tick"]
    slow = next(e for e in events if e["event"] == "slow_job")
    assert slow["job_type"] == QUOTED_TYPE
    assert next(e for e in events if e["event"] == "tick")["jobs"]["claimed"] == 1
