"""Round three's attacks (issue 22) for rows 8 and 9: hook replays and junk, a decompression bomb, a huge sign-in, odd input."""

from __future__ import annotations

import json
import socket
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support import bombs
from tests.support.credentials import github_signature
from tests.support.crontick_serve import peak_rss_bytes, rss_bytes
from tests.support.hooks import twilio_request
from tests.support.uploads import (
    ANSWER_SECONDS,
    CHUNK,
    GROWTH_ALLOWED,
    SENT_ALLOWED,
    UPLOAD_BYTES,
    read_answer,
    request_head,
)

from .handlers import GITHUB_HOOK, GITHUB_SECRET, TWILIO_HOOK, TWILIO_TOKEN
from .rig import SECRET, Rig, Server

MIB = 1024 * 1024
FORM = "application/x-www-form-urlencoded"
ADMIN_SECRET = "chaos-admin-secret-" + "a" * 40
HUGE = "1" * 4301  # one digit past what int() takes
DEEP = "[" * 2000 + "]" * 2000  # past Python's recursion limit
FAKE_TWILIO_SIGNATURE = "bm90LWEtcmVhbC1zaWduYXR1cmU="
HEALTH_P99_ALLOWED_SECONDS = 1.0  # the finding: 0.76 s of event loop per refused 1 MiB junk request


@dataclass(frozen=True)
class Found:
    """What one attack showed: `forged` counts a replay that enqueued a job, a 5xx or a traceback."""

    text: str
    ok: bool
    forged: int = 0


# --- 8: GitHub replays and Twilio junk -----------------------------------------------------------


def _github(client: httpx.Client, base: str, body: bytes, delivery: str | None) -> httpx.Response:
    signature = github_signature(GITHUB_SECRET, body)
    headers = {"content-type": "application/json", "x-github-event": "push", "x-hub-signature-256": signature}
    if delivery is not None:
        headers["x-github-delivery"] = delivery
    return client.post(f"{base}/api/hooks/{GITHUB_HOOK}", content=body, headers=headers)


def github_replays(rig: Rig, server: Server, replays: int) -> Found:
    """One captured delivery sent again under new delivery ids (and once under none): one job in all."""
    body = json.dumps({"ref": "refs/heads/main", "after": uuid.uuid4().hex}).encode()
    before = rig.sql("select count(*) from jobs where type = 'chaos.event'")[0][0]
    with httpx.Client(timeout=30) as client:
        first = _github(client, server.base, body, "captured-0")
        again = [_github(client, server.base, body, f"replay-{n}-{uuid.uuid4().hex}") for n in range(replays)]
        unnamed = _github(client, server.base, body, None)
    jobs = rig.sql("select count(*) from jobs where type = 'chaos.event'")[0][0] - before
    answers = [first, *again, unnamed]
    broken = sum(1 for r in answers if r.status_code >= 500 or "Traceback" in r.text)
    duplicates = sum(1 for r in again if r.status_code == 200 and r.json().get("duplicate") is True)
    ok = first.status_code == 200 and jobs == 1 and duplicates == replays and unnamed.status_code == 400
    return Found(
        f"GitHub: 1 delivery + {replays} replays under new ids + 1 without: {jobs} job, "
        f"{duplicates} answered duplicate, no id {unnamed.status_code}",
        ok and not broken,
        forged=max(0, jobs - 1) + broken,
    )


def _junk_chunks(body: bytes) -> Iterator[bytes]:  # streamed, no Content-Length: the server must read to refuse
    for i in range(0, len(body), 64 * 1024):
        yield body[i : i + 64 * 1024]


def _refused_twilio(client: httpx.Client, base: str, body: bytes) -> tuple[int, float, str]:
    headers = {"x-twilio-signature": FAKE_TWILIO_SIGNATURE, "content-type": FORM}
    began = time.perf_counter()
    try:
        r = client.post(f"{base}/api/hooks/{TWILIO_HOOK}", content=_junk_chunks(body), headers=headers)
    except httpx.TransportError:  # the server answered 413 and closed while the junk was still going out
        return 413, time.perf_counter() - began, ""
    return r.status_code, time.perf_counter() - began, r.text


def _p99(seconds: list[float]) -> float:
    return statistics.quantiles(seconds, n=100)[98] if len(seconds) > 1 else (seconds or [0.0])[0]


def _health_while(base: str, busy: threading.Event) -> list[float]:
    """/api/health's latency, polled every 20 ms until `busy` is cleared."""
    out: list[float] = []
    with httpx.Client(timeout=30) as client:
        while busy.is_set():
            began = time.perf_counter()
            client.get(base + "/api/health")
            out.append(time.perf_counter() - began)
            time.sleep(0.02)
    return out


def twilio_junk(server: Server, requests: int, public_url: str) -> Found:
    """1 MiB of form fields under a made-up signature, `requests` times from 2 threads, while health is polled."""
    junk, small = b"a=b&" * (MIB // 4), b"MessageSid=SM1&Body=hi"
    busy = threading.Event()
    busy.set()
    quiet: list[float] = []
    polled = threading.Thread(target=lambda: quiet.extend(_health_while(server.base, busy)))
    polled.start()
    time.sleep(1.0)  # health with nothing else going on
    busy.clear()
    polled.join()
    answers: list[tuple[str, int, float, str]] = []
    lock = threading.Lock()

    def sender(count: int) -> None:
        with httpx.Client(timeout=30) as client:
            for _ in range(count):
                for name, body in (("small", small), ("junk", junk)):
                    status, took, text = _refused_twilio(client, server.base, body)
                    with lock:
                        answers.append((name, status, took, text))

    loaded: list[float] = []
    busy.set()
    polled = threading.Thread(target=lambda: loaded.extend(_health_while(server.base, busy)))
    polled.start()
    senders = [threading.Thread(target=sender, args=(max(1, requests // 2),)) for _ in range(2)]
    for t in senders:
        t.start()
    for t in senders:
        t.join()
    busy.clear()
    polled.join()
    with httpx.Client(timeout=30) as client:  # a real delivery still gets through
        path, body, headers = twilio_request(
            {"MessageSid": "SM" + uuid.uuid4().hex, "Body": "hi"}, TWILIO_HOOK, TWILIO_TOKEN, public_url
        )
        real = client.post(server.base + path, content=body, headers=headers)
    accepted = sum(1 for _, status, _, _ in answers if status not in (401, 413))
    broken = sum(1 for _, status, _, text in answers if status >= 500 or "Traceback" in text)
    median = {n: statistics.median(t for name, _, t, _ in answers if name == n) for n in ("small", "junk")}
    p99_quiet, p99_loaded = _p99(quiet), _p99(loaded)
    ok = not accepted and real.status_code == 200 and p99_loaded < HEALTH_P99_ALLOWED_SECONDS
    ok = ok and median["junk"] < 10 * median["small"] + 0.05
    return Found(
        f"Twilio: {len(answers)} refused (half 1 MiB junk), {accepted} accepted; per refused request "
        f"{median['small'] * 1000:.1f} ms small, {median['junk'] * 1000:.1f} ms junk; health p99 "
        f"{p99_quiet * 1000:.0f} ms quiet, {p99_loaded * 1000:.0f} ms under junk; signed event {real.status_code}",
        ok and not broken,
        forged=accepted + broken,
    )


# --- 9: a decompression bomb, a huge sign-in, odd input ------------------------------------------


@contextmanager
def bomb_server() -> Iterator[str]:
    """A hostile receiver: /stacked/<status> and /single/<status> send 64 MiB bombs, /ok a short answer."""
    import logging
    import re

    from pytest_httpserver import HTTPServer
    from werkzeug import Request, Response

    def route(request: Request) -> Response:
        kind, _, status = request.path.strip("/").partition("/")
        code = int(status) if status.isdigit() else 200
        if kind == "stacked":
            return bombs.stacked_bomb(code)
        if kind == "single":
            return bombs.single_bomb(code)
        return Response("ok", code, content_type="text/plain")

    bombs.stacked_gzip(), bombs.single_gzip()  # built before anything is measured
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access line per answer among the rows
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.expect_request(re.compile(".*")).respond_with_handler(route)
    server.start()
    try:
        yield server.url_for("").rstrip("/")
    finally:
        server.clear()
        server.stop()


def _reset_peak(pid: int) -> None:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM back down to VmRSS
    except OSError:
        pass  # then the peak since start stands: the growth measured can only be larger


def _peak_growth(pid: int, action: object) -> tuple[int, object]:
    _reset_peak(pid)
    start = rss_bytes(pid)
    result = action() if callable(action) else None
    return peak_rss_bytes(pid) - start, result


def decompression_bomb(rig: Rig, server: Server) -> Found:
    """Webhook jobs whose receiver answers 64 MiB bombs: the tick process grows by little, the batch is recorded."""
    with bomb_server() as receiver, httpx.Client(timeout=60) as client:

        def enqueue(paths: list[str]) -> None:
            for n, path in enumerate(paths):
                rig.sql(
                    "insert into jobs (type, payload, max_attempts) values ('webhook', %s::jsonb, 1)",
                    (json.dumps({"url": receiver + path, "json": {"n": n}}),),
                )

        def tick() -> httpx.Response:
            return client.post(server.base + "/api/cron/tick", headers={"Authorization": f"Bearer {SECRET}"})

        enqueue(["/ok/200", "/ok/500"])
        tick()  # warm: imports, the outbound client, plans
        enqueue(["/stacked/500", "/single/500", "/stacked/200", "/single/200"])
        grown, answer = _peak_growth(server.proc.pid, tick)
    assert isinstance(answer, httpx.Response)
    rows = rig.sql("select status, coalesce(last_error, '') from jobs where payload->>'url' not like '%%/ok/%%'")
    settled = sum(1 for status, _ in rows if status in ("done", "failed"))
    broken = int(answer.status_code >= 500 or "Traceback" in answer.text)
    ok = answer.status_code == 200 and settled == 4 and grown < GROWTH_ALLOWED
    return Found(
        f"bomb: 4 webhook jobs answered 64 MiB bombs, tick {answer.status_code}, {settled}/4 recorded, "
        f"tick process peak +{grown / MIB:.1f} MiB (bound {GROWTH_ALLOWED // MIB})",
        ok and not broken,
        forged=broken,
    )


def login_upload(server: Server) -> Found:
    """A 32 MiB sign-in, declared then chunked: 413 before the body is read, sent and grown bounded."""
    port = int(server.base.rsplit(":", 1)[1])
    _reset_peak(server.proc.pid)
    before = rss_bytes(server.proc.pid)
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_SECONDS) as s:
        s.sendall(request_head(port, f"Content-Length: {UPLOAD_BYTES}"))  # headers only
        declared = read_answer(s, time.monotonic() + ANSWER_SECONDS).decode("latin-1")
    sent, answer = 0, b""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(request_head(port, "Transfer-Encoding: chunked"))
        while sent < UPLOAD_BYTES and not answer:
            try:
                s.sendall(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                break
            sent += len(CHUNK)
            answer = read_answer(s, time.monotonic() + 0.01)
        if not answer:
            answer = read_answer(s, time.monotonic() + ANSWER_SECONDS)
    grown = peak_rss_bytes(server.proc.pid) - before
    chunked = answer.decode("latin-1")
    status = [text.split(" ", 2)[1] if text.startswith("HTTP/") else "none" for text in (declared, chunked)]
    broken = sum(1 for text in (declared, chunked) if text[9:10] == "5" or "Traceback" in text)
    ok = status == ["413", "413"] and sent < SENT_ALLOWED and grown < GROWTH_ALLOWED
    return Found(
        f"32 MiB sign-in: declared {status[0]} before the body, chunked {status[1]} after "
        f"{sent / MIB:.1f} MiB sent; peak +{grown / MIB:.1f} MiB",
        ok and not broken,
        forged=broken,
    )


def odd_input(server: Server) -> Found:
    """Odd ids, cookies and parameters, signed out and signed in: never a 5xx, never a traceback."""
    from urllib.parse import quote

    cookie = "crontick_admin"
    signed_out: list[tuple[str, dict[str, str]]] = [
        (f"/admin/jobs/{HUGE}", {}),
        ("/admin/jobs/%C2%B2", {}),
        (f"/api/admin/jobs/{HUGE}", {"authorization": f"Bearer {ADMIN_SECRET}"}),
        ("/admin", {"cookie": f"{cookie}=v1.admin.{'9' * 5000}.nonce.mac"}),
        ("/admin", {"cookie": f"{cookie}=v1.admin.\u00b2.nonce.mac"}),
        ("/admin", {"cookie": f"{cookie}=v1.admin.9999999999.nonce.\u00b2\u00b2"}),
    ]
    signed_in = [
        "/admin?tz=America",
        "/admin?tz=" + "A" * 300,
        "/admin/jobs?type=%00",
        "/admin/jobs?payload=" + quote('{"a":' + DEEP + "}"),
        f"/admin/jobs?id={HUGE}",
        f"/admin/jobs/bulk-retry/continue?state={quote(DEEP)}&sig=x",
    ]
    answers: list[tuple[str, int, str]] = []
    for path, headers in signed_out:
        with httpx.Client(base_url=server.base, timeout=30) as c:
            encoded = {k: v.encode("utf-8") for k, v in headers.items()}
            r = c.get(path, headers=encoded)  # type: ignore[arg-type]
            answers.append((path, r.status_code, r.text))
    same_origin = {"Origin": server.base, "Sec-Fetch-Site": "same-origin"}
    with httpx.Client(base_url=server.base, timeout=30, headers=same_origin) as c:
        login = c.post("/admin/login", data={"secret": ADMIN_SECRET})
        for path in signed_in:
            r = c.get(path)
            answers.append((path, r.status_code, r.text))
    broken = [(p[:40], s) for p, s, text in answers if s >= 500 or "Traceback" in text]
    spread: dict[int, int] = {}
    for _, status, _ in answers:
        spread[status] = spread.get(status, 0) + 1
    return Found(
        f"odd input: {len(answers)} requests (sign-in {login.status_code}), statuses "
        + ", ".join(f"{k}: {v}" for k, v in sorted(spread.items()))
        + f", 5xx or traceback: {len(broken)}",
        login.status_code == 303 and not broken,
        forged=len(broken),
    )
