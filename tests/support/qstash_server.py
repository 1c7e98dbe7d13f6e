"""A QStash stand-in over real HTTP, built from Upstash's documented publish API (there is no offline
QStash server: its CLI downloads a binary).

`POST /v2/publish/<destination URL>` with `Authorization: Bearer <token>`, `Upstash-Not-Before: <unix
seconds>` (or `Upstash-Delay: 50s|15m|2h|1d`) and `Upstash-Deduplication-Id` answers 201
`{"messageId": …}`, or **202** with the existing id for a duplicate within 10 minutes. At Not-Before it
delivers the body with `Upstash-Method` (default POST) to the destination, signed with
`Upstash-Signature` (HS256: iss Upstash, sub = the destination URL, body = base64url(SHA-256(body)),
a fresh jti), and retries a non-2xx answer up to `retries` times. `fail_next` makes the next publishes
answer a given status instead; `stall_seconds` makes them answer late. Faults of delivery (issue 35): `hold`
accepts a message and never delivers it; `copies` delivers each message that many times (QStash delivers at
least once), all at once with `copies_at_once`; `clock_ahead_seconds` is how far the stand-in's clock runs ahead
of the real one (and the database's), so it delivers that much before Not-Before.
`held=True` (bench/wakeup_day.py,
whose day is time compressed) delivers nothing by itself: the caller moves its clock with `advance()`
and delivers what is due with `deliver()`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from tests.support.credentials import hs256
from tests.support.servers import answer_json

DEDUPE_WINDOW_SECONDS = 600
INSTANT_AT_END = re.compile(r"(\d{8}T\d{6}Z)$")
INSTANT_FORMAT = "%Y%m%dT%H%M%SZ"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass
class Delivery:
    message_id: str
    url: str
    due_at: float  # unix seconds: Not-Before
    delivered_at: float | None = None
    statuses: list[int] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # the publish's, lower-cased
    body: bytes = field(default=b"", repr=False)


@dataclass
class QStashStandIn:
    token: str
    signing_key: str
    retries: int = 3
    url: str = ""
    published: list[dict[str, Any]] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    fail_next: list[int] = field(default_factory=list)
    stall_seconds: float = 0.0
    hold: bool = False
    copies: int = 1
    copies_at_once: bool = False
    clock_ahead_seconds: float = 0.0
    held: bool = False
    cancelled: list[str] = field(default_factory=list)  # message ids deleted with DELETE /v2/messages/{id}
    stall_cancel_seconds: float = 0.0  # a DELETE answers this late
    _dedupe: dict[str, tuple[str, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """The publish API's answer; a delivery is scheduled for a new message."""
        if headers.get("authorization") != f"Bearer {self.token}":
            return 401, {"error": "Unauthorized"}
        destination = path.removeprefix("/v2/publish/")
        if not destination.startswith(("http://", "https://")):
            return 400, {"error": "invalid destination url"}
        now = time.time()
        with self._lock:
            self.published.append({"destination": destination, "headers": headers, "body": body, "at": now})
            if self.fail_next:
                status = self.fail_next.pop(0)
                return status, {"error": f"stand-in failure {status}"}
            key = headers.get("upstash-deduplication-id")
            if key and key in self._dedupe and now - self._dedupe[key][1] < DEDUPE_WINDOW_SECONDS:
                return 202, {"messageId": self._dedupe[key][0]}
            message_id = f"msg_{uuid.uuid4().hex}"
            if key:
                self._dedupe[key] = (message_id, now)
            delivery = Delivery(message_id, destination, _not_before(headers, now), headers=headers, body=body)
            self.deliveries.append(delivery)
        if not self.hold and not self.held:
            threading.Thread(target=self._deliver_copies, args=(delivery,), daemon=True).start()
        return 201, {"messageId": message_id}

    def cancel(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """`DELETE /v2/messages/{messageId}`: a pending message is deleted (never delivered), 200; 404 when there is
        none (delivered already, or never published)."""
        if headers.get("authorization") != f"Bearer {self.token}":
            return 401, {"error": "Unauthorized"}
        message_id = path.removeprefix("/v2/messages/")
        with self._lock:
            pending = [d for d in self.deliveries if d.message_id == message_id and d.delivered_at is None]
            if not pending or message_id in self.cancelled:
                return 404, {"error": "message not found"}
            self.cancelled.append(message_id)
        return 200, {}

    def _deliver_copies(self, delivery: Delivery) -> None:
        time.sleep(max(0.0, delivery.due_at - self.clock_ahead_seconds - time.time()))
        if delivery.message_id in self.cancelled:
            return
        copies = [delivery] + [
            Delivery(delivery.message_id, delivery.url, delivery.due_at, headers=delivery.headers, body=delivery.body)
            for _ in range(self.copies - 1)
        ]
        with self._lock:
            self.deliveries.extend(copies[1:])
        if not self.copies_at_once:
            for copy in copies:
                self.deliver(copy)
            return
        threads = [threading.Thread(target=self.deliver, args=(copy,)) for copy in copies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def pending(self) -> list[Delivery]:
        """The deliveries not made yet, earliest Not-Before first."""
        with self._lock:
            return sorted((d for d in self.deliveries
                       if d.delivered_at is None and not d.statuses and d.message_id not in self.cancelled),
                          key=lambda d: d.due_at)  # fmt: skip

    def advance(self, seconds: float) -> None:
        """Move this QStash's clock forward as crontick.testing.advance moves the database's: every pending
        Not-Before comes `seconds` sooner and every deduplication id `seconds` older; an id that ends in a UTC
        instant (crontick's `…-20261205T090100Z`) names an instant of the old clock, so its instant moves too
        (whole `seconds` keep it on crontick's one-second grid), and so does the instant a delivery's body names
        (which crontick.testing.advance moved in crontick_wakeups: unmoved, no delivery would match its booking)."""
        for delivery in self.pending():
            delivery.due_at -= seconds
            delivery.body = _moved_body(delivery.body, seconds)
        with self._lock:
            self._dedupe = {_moved(key, seconds): (message_id, at - seconds)
                            for key, (message_id, at) in self._dedupe.items()}  # fmt: skip

    def deliver(self, delivery: Delivery) -> None:
        """Deliver now, signed, retrying a non-2xx answer up to `retries` times."""
        headers, body = delivery.headers, delivery.body
        method = headers.get("upstash-method", "POST")
        for attempt in range(self.retries + 1):
            signature = self.signature(delivery.url, body)
            sent = {"Upstash-Signature": signature, "Upstash-Message-Id": delivery.message_id,
                    "Upstash-Retried": str(attempt), "Content-Type": headers.get("content-type", "application/json")}  # fmt: skip
            try:
                status = httpx.request(method, delivery.url, headers=sent, content=body, timeout=30).status_code
            except httpx.HTTPError:
                status = 0
            delivery.statuses.append(status)
            if 200 <= status < 300:
                delivery.delivered_at = time.time()
                return
            time.sleep(0.2)

    def signature(self, url: str, body: bytes) -> str:
        now = int(time.time())
        digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).decode()
        claims = {"iss": "Upstash", "sub": url, "exp": now + 300, "nbf": now, "iat": now,
                  "jti": f"jwt_{uuid.uuid4().hex}", "body": digest}  # fmt: skip
        return hs256(claims, self.signing_key)

    def wait_delivered(self, count: int = 1, timeout: float = 30.0) -> list[Delivery]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = [d for d in self.deliveries if d.delivered_at is not None]
            if len(done) >= count:
                return done
            time.sleep(0.05)
        raise AssertionError(f"expected {count} deliveries within {timeout} s, got: {self.deliveries}")


def _moved(key: str, seconds: float) -> str:
    """A deduplication id whose trailing UTC instant is `seconds` earlier (any other id as it is)."""
    found = INSTANT_AT_END.search(key)
    if found is None:
        return key
    instant = datetime.strptime(found[1], INSTANT_FORMAT).replace(tzinfo=UTC) - timedelta(seconds=seconds)
    return key[: found.start(1)] + instant.strftime(INSTANT_FORMAT)


def _moved_body(body: bytes, seconds: float) -> bytes:
    """A crontick delivery's body (`{"crontick": "tick", "instant": …}`) with its instant `seconds` earlier; any
    other body as it is."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not (isinstance(data, dict) and data.get("crontick") == "tick" and isinstance(data.get("instant"), str)):
        return body
    data["instant"] = (datetime.fromisoformat(data["instant"]) - timedelta(seconds=seconds)).isoformat()
    return json.dumps(data, separators=(",", ":")).encode()


def _not_before(headers: dict[str, str], now: float) -> float:
    if "upstash-not-before" in headers:
        return float(int(headers["upstash-not-before"]))
    delay = headers.get("upstash-delay")
    if delay:
        return now + int(delay[:-1]) * _UNITS[delay[-1]]
    return now


@contextmanager
def qstash_stand_in(token: str, signing_key: str, *, held: bool = False) -> Iterator[QStashStandIn]:
    """The stand-in on a free loopback port; its base URL (QSTASH_URL) is `.url`."""
    stand_in = QStashStandIn(token, signing_key, held=held)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if stand_in.stall_seconds:
                time.sleep(stand_in.stall_seconds)
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer_json(self, *stand_in.publish(self.path, headers, body))

        def do_DELETE(self) -> None:  # noqa: N802 (http.server's name)
            if stand_in.stall_cancel_seconds:
                time.sleep(stand_in.stall_cancel_seconds)
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer_json(self, *stand_in.cancel(self.path, headers))

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stand_in.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
