"""Secrets that are not a Settings field's value (the DATABASE_URL password, inbound hooks' secrets) never reach
a stored error: a real tick stores the handler's error scrubbed of them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

import crontick
from crontick.hooks.inbound import forget
from tests.support.core_jobs import db_now, job_row, settings_for, tick

DB_PASSWORD = "db p@ss-Zq81-never-stored"  # a space and an @: written percent-encoded in the URL
HOOK_SECRET = "hook-secret-" + "H" * 32
ENV_HOOK_SECRET = "env-hook-secret-" + "E" * 32


@crontick.handler("t_scrub.fail")
async def fail(payload: Any, job: crontick.Job) -> None:
    raise RuntimeError(payload["text"])


def _stored_error(database_url: str, conn: psycopg.Connection[Any], text: str, settings_url: str | None = None) -> str:
    """The error stored for a job raising `text`, run by a real tick whose Settings name `settings_url`."""
    job_id = crontick.enqueue(conn, "t_scrub.fail", {"text": text})
    settings = dataclasses.replace(settings_for(database_url), database_url=settings_url or database_url)
    tick(database_url, settings, now=db_now(conn))
    error = job_row(conn, job_id)["last_error"]
    assert isinstance(error, str)
    return error


def test_the_database_url_password_is_scrubbed_as_written_and_as_read(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with_password = f"postgresql://app:{quote(DB_PASSWORD, safe='')}@db.example.com:6543/app"
    text = f"connect failed for {with_password} (password {DB_PASSWORD!r})"
    error = _stored_error(database_url, conn, text, settings_url=with_password)
    assert (
        error
        == "RuntimeError: connect failed for postgresql://app:[redacted]@db.example.com:6543/app (password '[redacted]')"
    )
    keywords = f"host=db.example.com user=app password='{DB_PASSWORD}' dbname=app"
    error = _stored_error(database_url, conn, f"bad: {DB_PASSWORD}", settings_url=keywords)
    assert error == "RuntimeError: bad: [redacted]"


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two hooks: one given its secret in code, one reading it from CRONTICK_HOOK_<NAME>_SECRET."""
    monkeypatch.setenv("CRONTICK_HOOK_T_SCRUB_ENV_SECRET", ENV_HOOK_SECRET)
    crontick.inbound("t-scrub-code", "t_scrub.fail", verify="bearer", secret=HOOK_SECRET)
    crontick.inbound("t-scrub-env", "t_scrub.fail", verify="bearer")
    yield
    forget("t-scrub-code")
    forget("t-scrub-env")


def test_inbound_hook_secrets_are_scrubbed(database_url: str, conn: psycopg.Connection[Any], hooks: None) -> None:
    text = f"upstream said: bad token {HOOK_SECRET}, and {ENV_HOOK_SECRET}"
    error = _stored_error(database_url, conn, text)
    assert error == "RuntimeError: upstream said: bad token [redacted], and [redacted]"
