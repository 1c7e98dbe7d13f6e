"""crontick inside a host app's logging: its records reach the host's handlers when the host configured
logging, and go to stderr (one JSON object a line) only when nothing is configured. Each case runs in
its own interpreter, since pytest itself puts handlers on the root logger."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.support.constants import ROOT, TEST_SECRET
from tests.support.databases import url_of

# A real tick over HTTP (Starlette's TestClient: HTTP itself is not under test here), then the
# stdout and stderr the host would see.
SCRIPT = """
import logging, sys
if sys.argv[1] == "host":
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="HOST %(name)s %(message)s")
from starlette.testclient import TestClient
from crontick.app import create_app
from crontick.settings import Settings
app = create_app(Settings(database_url=sys.argv[2], cron_secret=sys.argv[3]))
with TestClient(app) as client:
    r = client.post("/api/cron/tick", headers={"Authorization": "Bearer " + sys.argv[3]})
    assert r.status_code == 200, r.text
"""


def _run(mode: str, database_url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, url_of(database_url), TEST_SECRET],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def _events(text: str, prefix: str = "") -> list[dict[str, Any]]:
    lines = [line.removeprefix(prefix) for line in text.splitlines() if line.startswith(prefix) and "{" in line]
    return [json.loads(line) for line in lines]


def test_a_host_with_logging_configured_gets_the_tick_line_and_crontick_writes_nothing_itself(
    database_url: str,
) -> None:
    result = _run("host", database_url)
    assert result.returncode == 0, result.stderr
    ticks = [e for e in _events(result.stdout, "HOST crontick ") if e["event"] == "tick"]
    assert len(ticks) == 1 and ticks[0]["jobs"]["claimed"] == 0
    assert '"event": "tick"' not in result.stderr  # not written twice


def test_without_logging_configured_crontick_writes_json_lines_to_stderr(database_url: str) -> None:
    result = _run("bare", database_url)
    assert result.returncode == 0, result.stderr
    events = _events(result.stderr)
    assert [e["event"] for e in events].count("tick") == 1
    assert result.stdout == ""
