"""The fake outside services the benches call (an LLM, Twilio, a reminder provider): an HTTP server on 127.0.0.1 at a
free port, a thread per request, quiet, with a lock for its counts. A bench subclasses LocalServer for what it counts
and LocalHandler for how it answers."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LocalServer(ThreadingHTTPServer):
    """Serves `handler` on 127.0.0.1 at a port the system picks (`url`); `lock` guards the subclass's counts."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a caller that hung up (a tick the budget stopped, a killed process) is what the benches do on purpose


class LocalHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers JSON bodies."""

    def answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return
