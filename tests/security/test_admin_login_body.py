"""Admin forms are read under a cap: a 32 MiB sign-in is refused with 413 before the server reads it (issue 22)."""

from __future__ import annotations

import socket
import time
from typing import Any

import psycopg

from tests.support.admin_pages import ADMIN_SECRET, add_jobs, csrf_of, running, settings_for, signed_in
from tests.support.constants import TEST_SECRET
from tests.support.crontick_serve import peak_rss_bytes, served
from tests.support.uploads import (
    ANSWER_SECONDS,
    CHUNK,
    GROWTH_ALLOWED,
    SENT_ALLOWED,
    UPLOAD_BYTES,
    read_answer,
    request_head,
)


def _env() -> dict[str, str]:
    return {"CRON_SECRET": TEST_SECRET, "CRONTICK_ADMIN_SECRET": ADMIN_SECRET}


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def test_a_declared_32_mib_sign_in_is_refused_before_a_byte_of_it_is_sent(database_url: str) -> None:
    with served(database_url, **_env()) as (base, proc):
        before = peak_rss_bytes(proc.pid)
        with socket.create_connection(("127.0.0.1", _port(base)), timeout=ANSWER_SECONDS) as s:
            # Headers only: a server that waited for the body would never answer.
            s.sendall(request_head(_port(base), f"Content-Length: {UPLOAD_BYTES}"))
            answer = read_answer(s, time.monotonic() + ANSWER_SECONDS).decode("latin-1")
        grown = peak_rss_bytes(proc.pid) - before
    assert answer.startswith("HTTP/1.1 413"), f"expected a 413 before the body, got: {answer[:200]!r}"
    assert "connection: close" in answer.lower()
    assert grown < GROWTH_ALLOWED, f"the server grew by {grown >> 20} MiB"


def test_a_chunked_32_mib_sign_in_is_cut_off_at_the_cap(database_url: str) -> None:
    """No Content-Length: the server reads 64 KiB, answers 413 and closes, while the client is still sending."""
    with served(database_url, **_env()) as (base, proc):
        before = peak_rss_bytes(proc.pid)
        sent = 0
        answer = b""
        with socket.create_connection(("127.0.0.1", _port(base)), timeout=2) as s:
            s.sendall(request_head(_port(base), "Transfer-Encoding: chunked"))
            while sent < UPLOAD_BYTES and not answer:
                try:
                    s.sendall(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    break  # the server closed (or stopped reading): look for its answer
                sent += len(CHUNK)
                answer = read_answer(s, time.monotonic() + 0.01)  # a slow sender: 64 KiB per 10 ms at most
            if not answer:
                answer = read_answer(s, time.monotonic() + ANSWER_SECONDS)
        grown = peak_rss_bytes(proc.pid) - before
    text = answer.decode("latin-1")
    assert text.startswith("HTTP/1.1 413"), f"expected a 413, got: {text[:200]!r} after {sent >> 20} MiB"
    assert sent < SENT_ALLOWED, f"the server took {sent >> 20} MiB of a 32 MiB sign-in before answering"
    assert grown < GROWTH_ALLOWED, f"the server grew by {grown >> 20} MiB"


def test_a_signed_in_form_over_the_cap_is_a_413_page_or_json(database_url: str, conn: psycopg.Connection[Any]) -> None:
    [job_id] = add_jobs(conn, 1)
    with running(settings_for(database_url)) as base:
        c = signed_in(base)
        token = csrf_of(c.get(f"/admin/jobs/{job_id}").text)
        big = {"csrf": token, "confirm": "yes", "back": "/admin/" + "x" * (80 * 1024)}
        page = c.post(f"/admin/jobs/{job_id}/retry", data=big)
        assert page.status_code == 413 and "text/html" in page.headers["content-type"]
        c = signed_in(base)
        as_json = c.post(f"/admin/jobs/{job_id}/retry", data=big, headers={"Accept": "application/json"})
        assert as_json.status_code == 413 and as_json.json()["error"] == "body_too_large"
        assert "expected a form of at most" in as_json.json()["detail"]
        status = conn.execute("select status from jobs where id = %s", (job_id,)).fetchone()
        assert status == ("failed",)  # refused, so nothing was done
