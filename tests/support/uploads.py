"""A 32 MiB sign-in sent by hand over a socket, for the login-body tests and make chaos row 9: what is sent, and the answer."""

from __future__ import annotations

import select
import socket
import time

UPLOAD_BYTES = 32 * 1024 * 1024
CHUNK = b"secret=" + b"x" * (64 * 1024 - 7)
# What a client may get onto the wire before the 413 arrives: the 64 KiB the server reads,
# loopback socket buffers, and the chunks sent while a loaded machine schedules the server.
SENT_ALLOWED = 8 * 1024 * 1024
# What the server may grow by while refusing: the 64 KiB form cap, socket buffers, slack.
GROWTH_ALLOWED = 16 * 1024 * 1024
ANSWER_SECONDS = 10.0


def request_head(port: int, framing: str) -> bytes:
    return (
        f"POST /admin/login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nSec-Fetch-Site: same-origin\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\n{framing}\r\n\r\n"
    ).encode()


def read_answer(s: socket.socket, deadline: float) -> bytes:
    """What the server answered (up to the end of its headers), or b"" if nothing came by the deadline."""
    received = b""
    while b"\r\n\r\n" not in received and time.monotonic() < deadline:
        ready, _, _ = select.select([s], [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            break
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    return received
