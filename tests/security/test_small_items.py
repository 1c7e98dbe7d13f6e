"""The review's smaller items: HEAD never ticks, configuration detail stays in the log, bounded
settings, and `crontick dev` neither prints an environment secret nor exposes its own."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from crontick.cli import main
from crontick.errors import ConfigError
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET

AUTH = {"Authorization": f"Bearer {TEST_SECRET}"}


def test_head_is_405_and_runs_no_tick(database_url: str, conn: psycopg.Connection[Any], live_app: Any) -> None:
    with live_app(Settings(database_url=database_url, cron_secret=TEST_SECRET)) as base:
        head = httpx.head(base + "/api/cron/tick", headers=AUTH)
        assert head.status_code == 405
        assert set(head.headers["allow"].replace(" ", "").split(",")) == {"GET", "POST"}
        assert httpx.head(base + "/api/health").status_code == 200  # uptime monitors may HEAD the health check
    assert conn.execute("select count(*) from crontick_ticks").fetchone()[0] == 0  # type: ignore[index]


def test_a_secret_in_a_handler_import_error_is_not_shown(
    live_app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    module = tmp_path / "leaky_handlers_for_security.py"
    module.write_text("raise RuntimeError('could not reach https://admin:p4ssw0rd@internal.example')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    settings = Settings(
        database_url=database_url, cron_secret=TEST_SECRET, handler_modules=("leaky_handlers_for_security",)
    )
    with live_app(settings) as base:
        for response in (httpx.post(base + "/api/cron/tick"), httpx.get(base + "/api/health")):
            assert response.status_code == 503
            assert response.json()["error"] == "misconfigured"
            assert "p4ssw0rd" not in response.text and "internal.example" not in response.text


@pytest.mark.parametrize(
    ("name", "value", "limit"),
    [
        ("CRONTICK_BATCH_SIZE", "10001", "10000"),
        ("CRONTICK_TIME_BUDGET_SECONDS", "901", "900"),
        ("CRONTICK_CONCURRENCY", "257", "256"),
        ("CRONTICK_MAX_BODY_BYTES", str(64 * 1024 * 1024 + 1), str(64 * 1024 * 1024)),
    ],
)
def test_settings_have_upper_bounds(name: str, value: str, limit: str) -> None:
    with pytest.raises(ConfigError, match=f"^{name}: expected at most {limit}, got: '{value}'$"):
        Settings.from_env({name: value})
    assert Settings.from_env({name: limit})


def test_dev_masks_a_secret_from_the_environment() -> None:
    production = "prod-" + "s3cr3t" * 8
    line = main.dev_curl_line(production, "http://127.0.0.1:8000", from_env=True)
    assert production not in line and production[8:30] not in line
    assert "Bearer $CRON_SECRET" in line and f"{len(production)} characters" in line
    generated = main.dev_curl_line("dev-abc", "http://127.0.0.1:8000", from_env=False)
    assert "Bearer dev-abc" in generated  # its own local secret is printed, so the line works as pasted


def test_dev_creates_its_secret_file_private_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / ".crontick" / "dev-secret"
    old = os.umask(0)  # even a permissive umask must not let the file be created world-readable
    try:
        secret = main._dev_secret(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert main._dev_secret(path) == secret  # kept, so the printed curl line stays valid
