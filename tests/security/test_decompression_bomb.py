"""Decompression bombs against every outbound read: the decoded bytes are bounded, and a bomb is a clear error.

A real threaded HTTP server on 127.0.0.1 sends each bomb (tests/support/bombs.py); the webhook job
runs through a real tick against real PostgreSQL; memory is measured with tracemalloc in process
and, for the whole set of paths, as resident memory (VmHWM) of a process of its own.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import crontick
from crontick.http import client
from crontick.settings import Settings
from tests.support import bombs
from tests.support.constants import ROOT
from tests.support.core_jobs import db_now, job_row, settings_for, tick

CAP = client.RESPONSE_MAX_BYTES
REFUSED = "expected an answer with no Content-Encoding or one layer of gzip or deflate, got: 'gzip, gzip'"
# Far below the 64 MiB a bomb expands to, and above what a request costs anyway: resident memory
# of a process of its own, and Python allocations in this one. tracemalloc counts every thread's,
# the test server's too, and now and then sees about 10 MB that a plain request (no bomb) costs as
# well, hence the larger bound in process.
PEAK_BOUND_BYTES = 8 * 1024 * 1024
TRACED_BOUND_BYTES = 16 * 1024 * 1024


def LOOPBACK_ALLOWED(url: str) -> Settings:  # noqa: N802
    """The bomb server listens on 127.0.0.1, which webhook jobs refuse by default."""
    return settings_for(url, webhook_deny_private=False)


def route(request: Request) -> Response:
    """/stacked/<status>, /single/<status> send the bombs; /ok/<status> a benign answer (status 200 when not given)."""
    kind, _, rest = request.path.strip("/").partition("/")
    tail = rest.rsplit("/", 1)[-1]
    status = int(tail) if tail.isdigit() else 200
    if kind == "stacked":
        return bombs.stacked_bomb(status)
    if kind == "single":
        return bombs.single_bomb(status)
    if request.path.endswith("/.well-known/jwks"):
        return Response(json.dumps({"keys": []}), status, content_type="application/json")
    if request.path.endswith("/api/cron/tick"):
        return Response(json.dumps({"jobs": {"claimed": 0}}), status, content_type="application/json")
    return Response("nope" if status >= 400 else "", status, content_type="text/plain")


@pytest.fixture(scope="module")
def bomb_server() -> Iterator[HTTPServer]:
    bombs.stacked_gzip(), bombs.single_gzip()  # built here, not in the server thread while a test measures
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.expect_request(re.compile(".*")).respond_with_handler(route)
    server.start()
    try:
        yield server
    finally:
        server.clear()
        server.stop()


def base(server: HTTPServer) -> str:
    return server.url_for("").rstrip("/")


def read(url: str, **kwargs: Any) -> tuple[httpx.Response | client.UnreadableBody, int]:
    """bounded_request's answer (or its refusal), and the peak of Python allocations (every thread's,
    the server's too) while it ran a second time: the first run builds the client, imports httpx's
    backends and starts the server's threads, megabytes that have nothing to do with the answer."""

    async def once() -> httpx.Response | client.UnreadableBody:
        try:
            return await client.bounded_request("GET", url, **kwargs)
        except client.UnreadableBody as exc:
            return exc

    async def go() -> tuple[httpx.Response | client.UnreadableBody, int]:
        await once()
        tracemalloc.start()
        try:
            return await once(), tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    return asyncio.run(go())


def test_the_bombs_are_what_the_review_sent() -> None:
    assert len(bombs.stacked_gzip()) < 300  # 273 bytes in the review; 269 here (gzip headers without a file name)
    assert len(zlib.decompress(zlib.decompress(bombs.stacked_gzip(), 31), 31)) == bombs.EXPANDED_BYTES


def test_stacked_encodings_are_refused_before_a_byte_of_the_body_is_read(bomb_server: HTTPServer) -> None:
    result, peak = read(base(bomb_server) + "/stacked/500")
    assert isinstance(result, client.UnreadableBody), result
    assert str(result) == REFUSED + "; its body was not read"
    assert result.answer.status_code == 500 and result.answer.content == b""
    assert peak < TRACED_BOUND_BYTES, peak


def test_a_single_gzip_bomb_is_decoded_only_up_to_the_cap(bomb_server: HTTPServer) -> None:
    result, peak = read(base(bomb_server) + "/single/200")
    assert isinstance(result, httpx.Response), result
    assert result.content == bytes(CAP)  # the first 64 KiB of the 64 MiB, and nothing more
    assert "content-encoding" not in result.headers  # the body handed back is decoded
    assert peak < TRACED_BOUND_BYTES, peak


def test_identity_is_asked_for_and_an_honest_gzip_answer_still_decodes(httpserver: HTTPServer) -> None:
    body = json.dumps({"keys": [], "note": "x" * 5000}).encode()
    httpserver.expect_request("/gz").respond_with_response(
        Response(gzip.compress(body), 200, headers={"Content-Encoding": "gzip"})
    )
    result, _ = read(httpserver.url_for("/gz"))
    assert isinstance(result, httpx.Response) and result.json()["note"] == "x" * 5000
    assert [request.headers["Accept-Encoding"] for request, _ in httpserver.log] == ["identity", "identity"]


def test_deflate_that_decodes_to_nothing_stops_at_the_wire_cap(httpserver: HTTPServer) -> None:
    """Empty deflate blocks, endlessly: no output grows, so only the cap on wire bytes ends the read."""
    packer = zlib.compressobj()
    header = packer.compress(b"") + packer.flush(zlib.Z_FULL_FLUSH)
    padding = packer.flush(zlib.Z_FULL_FLUSH) * 8192  # an empty stored block is 5 bytes
    sent = {"bytes": 0}

    def endless() -> Iterator[bytes]:
        yield header
        for _ in range(2000):  # about 80 MiB, if anyone read it all
            sent["bytes"] += len(padding)
            yield padding

    httpserver.expect_request("/pad").respond_with_handler(
        lambda _: Response(endless(), 500, headers={"Content-Encoding": "deflate"})
    )
    result, _ = read(httpserver.url_for("/pad"))
    assert isinstance(result, httpx.Response) and result.content == b""
    assert sent["bytes"] < 64 * CAP, f"{sent['bytes']} bytes were pulled from the server"


def _webhook(conn: psycopg.Connection[Any], url: str, **options: Any) -> int:
    return crontick.enqueue(conn, "webhook", {"url": url, "json": {"order": 7}}, **options)


def test_bombs_end_their_webhook_jobs_with_a_clear_error_and_the_batch_is_recorded(
    database_url: str, conn: psycopg.Connection[Any], bomb_server: HTTPServer
) -> None:
    url = base(bomb_server)
    stacked, single, fine = (_webhook(conn, url + p) for p in ("/stacked/500", "/single/503", "/ok/204"))
    result = tick(database_url, LOOPBACK_ALLOWED(database_url), now=db_now(conn))
    assert (result.jobs.claimed, result.jobs.succeeded, result.jobs.retried) == (3, 1, 2)
    row = job_row(conn, stacked)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert (
        row["last_error"]
        == f"DeliveryFailed: webhook {url}/stacked/500 answered HTTP 500: ({REFUSED}; its body was not read)"
    )
    row = job_row(conn, single)
    assert (row["status"], row["attempts"]) == ("pending", 1)
    # The excerpt is the bomb's first 500 decoded bytes: zeros, which PostgreSQL text cannot hold.
    assert row["last_error"] == f"DeliveryFailed: webhook {url}/single/503 answered HTTP 503: " + "\ufffd" * 500
    assert job_row(conn, fine)["status"] == "done"
    attempts = conn.execute("select job_id, outcome from job_attempts order by job_id").fetchall()
    assert attempts == [(stacked, "retried"), (single, "retried")]


def test_a_2xx_whose_body_is_a_bomb_is_delivered(
    database_url: str, conn: psycopg.Connection[Any], bomb_server: HTTPServer
) -> None:
    """The status is the receiver's answer; the body of a 2xx is never used, so a bomb in it changes nothing."""
    jobs = [_webhook(conn, base(bomb_server) + p) for p in ("/stacked/200", "/single/202")]
    assert tick(database_url, LOOPBACK_ALLOWED(database_url), now=db_now(conn)).jobs.succeeded == 2
    assert [job_row(conn, j)["status"] for j in jobs] == ["done", "done"]


def _subprocess_env(database_url: str) -> dict[str, str]:
    """The test's own crontick (this worktree's lib) and tests, for a process of its own."""
    lib = Path(crontick.__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRONTICK_", "CRON_", "DATABASE_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(lib), str(ROOT)]),
        DATABASE_URL=database_url,
        CRON_SECRET="test-secret-" + "x" * 32,
        CRONTICK_WEBHOOK_DENY_PRIVATE="0",
    )
    return env


def test_peak_resident_memory_stays_far_below_the_expansion(
    database_url: str, conn: psycopg.Connection[Any], bomb_server: HTTPServer
) -> None:
    """Every outbound path (webhook jobs, a reminder, an alert, the JWKS fetch, the http kick) against the
    bombs, in a fresh process: its resident high-water mark grows by a few MiB at most, not 64."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.security.bomb_process", database_url, base(bomb_server)],
        env=_subprocess_env(database_url),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\nbomb peak RSS growth: {json.dumps(report, indent=1)}", file=sys.stderr)
    bombed = report["bombed"]
    for name, seen in bombed.items():
        assert seen["peak_growth_bytes"] < PEAK_BOUND_BYTES, (name, seen)
    assert "its body was not read" in bombed["jwks"]["result"] and "KeysUnavailable" in bombed["jwks"]["result"]
    assert "KeysUnavailable" in bombed["jwks_single"]["result"]  # 64 KiB of zeros is no key set
    assert REFUSED in bombed["kick"]["result"]
    assert bombed["kick_single"]["result"].startswith(("JSONDecodeError", "ValueError", "UnicodeDecodeError"))
    # The tick recorded every outcome: the bombs' jobs retried or failed with their reasons, the 2xx done.
    statuses = conn.execute("select payload->'json'->>'n', status, attempts from jobs order by 1").fetchall()
    assert statuses == [("0", "failed", 1), ("1", "pending", 1), ("2", "done", 1), ("3", "done", 1)]
    [reminder] = conn.execute("select status, last_error from reminder_sends").fetchall()
    assert reminder[0] == "failed" and REFUSED in reminder[1]  # failed for now: retried after its backoff
    [alert] = conn.execute("select status, last_error from crontick_alerts").fetchall()
    assert alert[0] == "pending" and REFUSED in alert[1]
