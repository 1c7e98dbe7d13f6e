"""A loopback TCP proxy in front of PostgreSQL, so a test can make the database vanish and come back."""

from __future__ import annotations

import socket
import threading
from typing import Any

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.support.servers import free_port


class TcpProxy:
    """Forwards 127.0.0.1:port to the server of `conninfo`; stop() drops every connection at once."""

    def __init__(self, conninfo: str) -> None:
        d = conninfo_to_dict(conninfo)
        host, port = str(d.get("host") or "127.0.0.1"), str(d.get("port") or "5432")
        if host.startswith("/"):  # the embedded server listens on a unix socket only
            self._family, self._address = socket.AF_UNIX, f"{host}/.s.PGSQL.{port}"
        else:
            self._family, self._address = socket.AF_INET, (host, int(port))  # type: ignore[assignment]
        self.port = free_port()
        self.conninfo = make_conninfo(conninfo, host="127.0.0.1", port=str(self.port))
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        listener.settimeout(0.05)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, []
        for s in [listener, *sockets]:
            if s is not None:
                _close(s)

    def _accept(self, listener: socket.socket) -> None:
        while self._listener is listener:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.socket(self._family)
            upstream.connect(self._address)
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    _close(sink)


def _close(s: Any) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
