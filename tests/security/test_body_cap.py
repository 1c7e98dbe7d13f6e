"""Request bodies: never read unless a method needs them, streamed under CRONTICK_MAX_BODY_BYTES, 413 above it."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx

from tests.support.constants import TEST_SECRET
from tests.support.crontick_serve import peak_rss_bytes, served

QSTASH_KEY = "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r"
UPLOAD_BYTES = 96 * 1024 * 1024
CHUNK = b"x" * (64 * 1024)
# What the server may grow by while refusing a 96 MiB upload: the 1 MiB cap, socket buffers, slack.
GROWTH_ALLOWED = 24 * 1024 * 1024


class Upload:
    """A chunked body generator that counts what the server let it send."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        while self.sent < self.total:
            self.sent += len(CHUNK)
            yield CHUNK


def _env(**extra: str) -> dict[str, str]:
    return {
        "CRON_SECRET": TEST_SECRET,
        "QSTASH_CURRENT_SIGNING_KEY": QSTASH_KEY,
        "CRONTICK_PUBLIC_URL": "https://app.example.com",
        **extra,
    }


def _upload(base: str, headers: dict[str, str]) -> tuple[httpx.Response, Upload]:
    upload = Upload(UPLOAD_BYTES)
    response = httpx.post(base + "/api/cron/tick", content=upload, headers=headers, timeout=60)
    return response, upload


def test_a_streamed_upload_with_a_signature_header_is_cut_at_the_cap(database_url: str) -> None:
    with served(database_url, **_env()) as (base, proc):
        before = peak_rss_bytes(proc.pid)
        response, upload = _upload(base, {"Upstash-Signature": "x.y.z"})
        grown = peak_rss_bytes(proc.pid) - before
    assert response.status_code == 413, response.text
    assert response.json()["error"] == "body_too_large"
    assert "CRONTICK_MAX_BODY_BYTES" in response.json()["detail"]
    assert grown < GROWTH_ALLOWED, f"the server grew by {grown >> 20} MiB for a {UPLOAD_BYTES >> 20} MiB upload"
    assert upload.sent < UPLOAD_BYTES, "the server read the whole upload"


def test_an_unauthenticated_upload_is_not_read_at_all(database_url: str) -> None:
    with served(database_url, **_env()) as (base, proc):
        before = peak_rss_bytes(proc.pid)
        response, _ = _upload(base, {"Authorization": "Bearer wrong"})
        grown = peak_rss_bytes(proc.pid) - before
    assert response.status_code == 401, response.text
    assert grown < GROWTH_ALLOWED, f"the server grew by {grown >> 20} MiB for an unauthenticated upload"


def test_a_declared_content_length_over_the_cap_is_refused_before_the_body(database_url: str) -> None:
    with served(database_url, **_env(CRONTICK_MAX_BODY_BYTES="4096")) as (base, _):
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(
                b"POST /api/cron/tick HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + f"Authorization: Bearer {TEST_SECRET}\r\n".encode()
                + b"Content-Length: 3000000000\r\nContent-Type: application/json\r\n\r\n{"
            )
            received = b""
            while chunk := s.recv(65536):  # the server closes after a 413 (Connection: close)
                received += chunk
            answer = received.decode()
        # The secret is right, but a body three gigabytes long is refused before a byte of it is read.
        assert answer.startswith("HTTP/1.1 413"), answer
        assert '"error":"body_too_large"' in answer

        small = httpx.post(base + "/api/cron/tick", content=b"{}", headers={"Authorization": f"Bearer {TEST_SECRET}"})
        assert small.status_code == 200, small.text
