"""The tick as a scheduler calls it: the real `curl` binary against the app served by uvicorn."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import psycopg
import pytest

import crontick
from tests.support.constants import TEST_SECRET
from tests.support.core_jobs import job_row, settings_for
from tests.support.http_checks import TICK, LiveApp

CURL = shutil.which("curl")
pytestmark = pytest.mark.skipif(CURL is None, reason="needs the curl binary")


def curl(*args: str) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of one curl call; -D - prints the response headers before the body."""
    out = subprocess.run(
        [str(CURL), "-sS", "-D", "-", *args], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    head, _, body = out.replace("\r\n", "\n").partition("\n\n")
    status_line, *lines = head.splitlines()
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def test_curl_post_with_the_secret_runs_due_jobs(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    job_id = crontick.enqueue(conn, "t_core.ok", {"via": "curl"})
    with live_app(settings_for(database_url)) as url:
        # The same line the README and `crontick dev` print.
        status, headers, body = curl("-X", "POST", "-H", f"Authorization: Bearer {TEST_SECRET}", url + TICK)
    assert status == 200 and headers["content-type"] == "application/json"
    summary = json.loads(body)
    assert summary["jobs"]["succeeded"] == 1 and summary["more"] is False
    assert job_row(conn, job_id)["status"] == "done"


def test_curl_without_the_secret_gets_401_json(live_app: LiveApp, database_url: str) -> None:
    with live_app(settings_for(database_url)) as url:
        status, headers, body = curl(url + TICK)
    assert status == 401
    assert headers["www-authenticate"].startswith("Bearer")
    assert json.loads(body)["error"] == "unauthorized"
