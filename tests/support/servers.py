"""Serving in tests: a free loopback port, an ASGI app on uvicorn in a thread, a JSON answer from an http.server
handler, a raw HTTP request, a process stopped."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answer_json(handler: Any, status: int, answer: Any) -> None:
    """Send `answer` as JSON from a stand-in's http.server request handler."""
    data = json.dumps(answer).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextmanager
def serve(app: Any, port: int | None = None, **options: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on a free (or the given) loopback port, in a thread; yields the base URL.
    `options` go to uvicorn.Config (e.g. root_path="/ops")."""
    import uvicorn

    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def stop(proc: subprocess.Popen[Any], timeout_seconds: float = 10) -> None:
    """SIGTERM, and SIGKILL if the process has not exited `timeout_seconds` later."""
    proc.terminate()
    try:
        proc.wait(timeout_seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout_seconds)


def raw_request(base: str, method: str, path: str, headers: list[tuple[str, str]], body: bytes) -> tuple[int, str]:
    """One HTTP/1.1 request written byte for byte, for what HTTP clients refuse to send (such as a
    header value with trailing spaces); returns (status, response text)."""
    host, port = base.removeprefix("http://").split(":")
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(head.encode("utf-8", "surrogateescape") + b"\r\n" + body)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    text = b"".join(chunks).decode("utf-8", "replace")
    status = int(text.split(" ", 2)[1]) if text.startswith("HTTP/") else 0
    return status, text
