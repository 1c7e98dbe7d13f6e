"""The `webhook` job type cannot reach internal addresses by default, checked on the resolved address."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

import crontick
from crontick.channels import wire
from crontick.http.netguard import is_internal
from crontick.settings import Settings
from tests.support.core_jobs import db_now, job_row, settings_for, tick


@pytest.fixture
def deny_private() -> Settings:
    """The default: CRONTICK_WEBHOOK_DENY_PRIVATE unset (the tick's default Settings)."""
    return Settings.from_env({})


@pytest.fixture
def allow_private() -> Settings:
    return Settings.from_env({"CRONTICK_WEBHOOK_DENY_PRIVATE": "0"})


def _run(database_url: str, conn: psycopg.Connection[Any], url: str, read: Settings) -> dict[str, Any]:
    """One webhook job to `url`, run by a tick whose Settings have the webhook_deny_private `read` has."""
    job_id = crontick.enqueue(conn, "webhook", {"url": url, "json": {"n": 1}})
    tick(database_url, settings_for(database_url, webhook_deny_private=read.webhook_deny_private), now=db_now(conn))
    return job_row(conn, job_id)


def test_the_default_refuses_loopback_by_address_and_by_name(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer, deny_private: Settings
) -> None:
    httpserver.expect_request("/hook").respond_with_data("", status=204)
    port = httpserver.port
    for url in (
        f"http://127.0.0.1:{port}/hook",
        f"http://localhost:{port}/hook",
        f"http://[::ffff:127.0.0.1]:{port}/hook",
        f"http://0x7f000001:{port}/hook",
    ):
        row = _run(database_url, conn, url, deny_private)
        assert row["status"] == "failed", (url, row)
        assert "which is internal" in row["last_error"] and "CRONTICK_WEBHOOK_DENY_PRIVATE" in row["last_error"], url
        assert row["attempts"] == 1, "a refused address is permanent, not retried"
    assert httpserver.log == [], "a refused webhook must not reach the server"


def test_with_the_flag_off_loopback_is_delivered(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer, allow_private: Settings
) -> None:
    httpserver.expect_request("/hook").respond_with_data("", status=204)
    row = _run(database_url, conn, f"http://localhost:{httpserver.port}/hook", allow_private)
    assert row["status"] == "done", row
    assert len(httpserver.log) == 1


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:169.254.169.254",
        "::ffff:10.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "2002:a9fe:a9fe::1",
        "::",
        "224.0.0.1",
    ],
)
def test_internal_ranges(address: str) -> None:
    assert is_internal(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:1.1.1.1"])
def test_public_addresses_pass(address: str) -> None:
    assert not is_internal(ipaddress.ip_address(address))


def test_a_huge_response_is_read_only_up_to_the_cap(
    database_url: str, conn: psycopg.Connection[Any], httpserver: HTTPServer, allow_private: Settings
) -> None:
    sent = {"bytes": 0}

    def endless() -> Iterator[bytes]:
        for _ in range(4096):  # up to 256 MiB, if anyone read it all
            sent["bytes"] += 65536
            yield b"e" * 65536

    httpserver.expect_request("/huge").respond_with_handler(lambda _: Response(endless(), status=500))
    row = _run(database_url, conn, httpserver.url_for("/huge"), allow_private)
    assert row["status"] == "pending" and "answered HTTP 500: eee" in row["last_error"], row
    assert len(row["last_error"]) < 1000
    # What the server wrote includes what loopback's socket buffers took before the client hung up (up to about
    # 10 MiB with Linux's default tcp_wmem and tcp_rmem maxima; 4 MiB was seen under load): far below the 256 MiB a
    # whole read would pull.
    assert sent["bytes"] < 256 * wire.RESPONSE_MAX_BYTES, f"{sent['bytes']} bytes were pulled from the server"
