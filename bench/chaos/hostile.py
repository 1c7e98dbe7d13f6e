"""Chaos scenarios 8 and 9, hostile callers: forged credentials and replays, then malformed HTTP input."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import jwt

from tests.support.credentials import qstash_signature, tick_token
from tests.support.servers import raw_request

from . import attacks
from .drain import TICK, bearer, tick
from .rig import SECRET, Rig
from .scenario import Row, Sizes

QSTASH_KEY = "sig_" + "q" * 28
PUBLIC_URL = "https://app.example.com"


# --- 8. auth under attack ------------------------------------------------------------------------


def _forgeries(rng: random.Random, n: int) -> list[tuple[str, list[tuple[str, str]], bytes]]:
    """n forged requests: (kind, header list, body). None of them carries a valid credential."""
    flipped = SECRET[:10] + ("d" if SECRET[10] != "d" else "e") + SECRET[11:]
    tick_url = PUBLIC_URL + TICK
    body = b'{"from": "qstash"}'
    makers: list[tuple[str, Callable[[], list[tuple[str, str]]]]] = [
        ("random bearer", lambda: [("authorization", "Bearer " + rng.randbytes(rng.randint(1, 64)).hex())]),
        ("truncated", lambda: [("authorization", "Bearer " + SECRET[: rng.randint(0, len(SECRET) - 1)])]),
        ("padded", lambda: [("authorization", "Bearer " + SECRET + rng.choice(["A", "0", "==", "."]))]),
        ("wrong case", lambda: [("authorization", "Bearer " + SECRET.upper())]),
        ("almost right", lambda: [("authorization", "Bearer " + flipped)]),
        ("empty header", lambda: [("authorization", "")]),
        ("scheme only", lambda: [("authorization", rng.choice(["Bearer", "Bearer ", "Basic " + SECRET]))]),
        ("repeated headers", lambda: [("authorization", "Bearer x"), ("authorization", "Bearer " + flipped)]),
        (
            "alg none",
            lambda: [
                (
                    "authorization",
                    "Bearer "
                    + jwt.encode(
                        {"aud": PUBLIC_URL, "iat": int(time.time()), "exp": int(time.time()) + 60, "jti": "n"},
                        "",
                        algorithm="none",
                    ),
                )
            ],
        ),
        ("other secret", lambda: [("authorization", "Bearer " + tick_token("other-" + SECRET, PUBLIC_URL))]),
        (
            "expired",
            lambda: [
                (
                    "authorization",
                    "Bearer " + tick_token(SECRET, PUBLIC_URL, iat=int(time.time()) - 400, exp=int(time.time()) - 100),
                )
            ],
        ),
        (
            "not yet valid",
            lambda: [
                (
                    "authorization",
                    "Bearer " + tick_token(SECRET, PUBLIC_URL, iat=int(time.time()) + 200, exp=int(time.time()) + 260),
                )
            ],
        ),
        (
            "wrong aud",
            lambda: [("authorization", "Bearer " + tick_token(SECRET, PUBLIC_URL, aud="https://other.example.com"))],
        ),
        (
            "qstash tampered body",
            lambda: [("upstash-signature", qstash_signature(QSTASH_KEY, tick_url, b'{"other": 1}'))],
        ),
        (
            "qstash other url",
            lambda: [
                ("upstash-signature", qstash_signature(QSTASH_KEY, "https://other.example.com" + TICK, body)),
                ("x-forwarded-host", "other.example.com"),
                ("x-forwarded-proto", "https"),
            ],
        ),
        ("qstash wrong key", lambda: [("upstash-signature", qstash_signature("sig_" + "w" * 28, tick_url, body))]),
    ]
    out = []
    for i in range(n):
        kind, make = makers[i % len(makers)]
        out.append((kind, make(), body))
    return out


def auth_attack(rig: Rig, sizes: Sizes) -> Row:
    rng = random.Random(8)
    forged = _forgeries(rng, sizes.auth_requests)
    env = {"QSTASH_CURRENT_SIGNING_KEY": QSTASH_KEY, "CRONTICK_PUBLIC_URL": PUBLIC_URL}
    body = b'{"from": "qstash"}'
    with rig.serve(env) as server, httpx.Client(timeout=30) as client:
        # Controls: each real credential works once, and its replay is one more forgery.
        token, signature = tick_token(SECRET, PUBLIC_URL), qstash_signature(QSTASH_KEY, PUBLIC_URL + TICK, body)
        controls = [
            tick(client, server.base),
            tick(client, server.base, bearer(token)),
            client.post(server.base + TICK, headers={"upstash-signature": signature}, content=body),
        ]
        replays = [
            tick(client, server.base, bearer(token)),
            client.post(server.base + TICK, headers={"upstash-signature": signature}, content=body),
        ]

        def send(item: tuple[str, list[tuple[str, str]], bytes]) -> tuple[str, int, str]:
            kind, headers, payload = item
            try:
                r = client.post(server.base + TICK, headers=headers, content=payload)
            except httpx.LocalProtocolError:  # e.g. "Bearer " with its trailing space: send it anyway
                return (kind, *raw_request(server.base, "POST", TICK, headers, payload))
            return kind, r.status_code, r.text

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(send, forged))
        # Round three (issue 22): a captured GitHub delivery replayed, and Twilio junk under made-up signatures.
        hooks = [
            attacks.github_replays(rig, server, sizes.hook_replays),
            attacks.twilio_junk(server, sizes.junk_requests, PUBLIC_URL),
        ]
        lines = server.log_lines()
    accepted = [kind for kind, status, _ in answers if status != 401] + [
        r.status_code for r in replays if r.status_code != 401
    ]
    secrets = (SECRET, QSTASH_KEY, token, signature)
    leaks = sum(1 for _, _, text in answers for s in secrets if s in text)
    leaks += sum(1 for line in lines for s in secrets if s in line)
    bad_lines = sum(1 for line in lines if not _one_json_object(line))
    ok = all(r.status_code == 200 for r in controls) and not accepted and not leaks and not bad_lines
    ok = ok and all(found.ok for found in hooks)
    return Row(
        "8 auth under attack",
        f"{len(forged) + len(replays):,} forged requests, 16 kinds, 2 replays; {sizes.hook_replays + 1} GitHub "
        f"replays; {sizes.junk_requests} Twilio junk requests",
        f"controls accepted {sum(r.status_code == 200 for r in controls)}/3; secret in responses or "
        f"{len(lines)} log lines: {leaks}; non-JSON lines: {bad_lines}; " + "; ".join(f.text for f in hooks),
        forged_accepted=len(accepted) + sum(found.forged for found in hooks),
        ok=ok,
    )


def _one_json_object(line: str) -> bool:
    if not line.startswith("{"):
        return line.startswith("INFO:") or line.startswith("WARNING:")  # uvicorn's own startup lines
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


# --- 9. bad HTTP input --------------------------------------------------------------------------


def bad_input(rig: Rig, sizes: Sizes) -> Row:
    rng = random.Random(9)
    methods = ["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "PROPFIND", "FOO"]
    content_types = [
        "application/json",
        "text/plain",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
        "",
        "\u00ff/\u00fe",
    ]
    bodies = [b"", b"{", b"\xff\xfe\xfd", b'{"a": "\xed\xa0\x80"}', b"[" * 5000, json.dumps({"x": "y" * 1000}).encode()]
    fives: list[str] = []
    tracebacks = 0
    statuses: dict[int, int] = {}
    env = {
        "CRONTICK_MAX_BODY_BYTES": "65536",
        "QSTASH_CURRENT_SIGNING_KEY": QSTASH_KEY,
        "CRONTICK_PUBLIC_URL": PUBLIC_URL,
        "CRONTICK_ADMIN_SECRET": attacks.ADMIN_SECRET,
        "CRONTICK_WEBHOOK_DENY_PRIVATE": "0",  # the bomb server listens on loopback
    }
    rig.reset()  # the bomb's tick runs only its own jobs
    with rig.serve(env) as server, httpx.Client(timeout=30) as client:
        # Round three (issue 22), measured first, while the server is fresh: its memory under a bomb and a
        # 32 MiB sign-in, then odd input.
        found = [attacks.decompression_bomb(rig, server), attacks.login_upload(server), attacks.odd_input(server)]
        huge = client.post(
            server.base + TICK, headers={"upstash-signature": "a.b.c"}, content=(b"x" * 65536 for _ in range(64))
        )
        for i in range(sizes.bad_requests):
            method = rng.choice(methods + ["POST", "GET"])
            path = rng.choice(
                [TICK, "/api/health", "/api/cron/tick/..", "/%ff", "/api/cron/tick?x=%00", "/" + "a" * 3000]
            )
            headers = {
                "content-type": rng.choice(content_types),
                "authorization": rng.choice(["", "Bearer \u00e9", "Bearer " + SECRET]),
            }
            if i % 3 == 0:
                headers["upstash-signature"] = rng.choice(["", "x", "a.b.c", "\u00e9.\u00e9.\u00e9"])
            content = rng.choice(bodies) if method not in ("GET", "HEAD") else b""
            status, text = raw_request(server.base, method, path, list(headers.items()), content)
            statuses[status] = statuses.get(status, 0) + 1
            if status >= 500 and status != 503 or status == 0:
                fives.append(f"{method} {path}: {status}")
            if "Traceback" in text:
                tracebacks += 1
        lines = server.log_lines()
    internal = sum(1 for line in lines if '"event": "internal_error"' in line)
    ok = huge.status_code == 413 and not fives and not tracebacks and not internal and all(f.ok for f in found)
    spread = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))
    return Row(
        "9 bad HTTP input",
        f"{sizes.bad_requests:,} malformed requests + a 4 MiB upload over a 64 KiB cap; a decompression bomb; "
        "a 32 MiB sign-in; odd admin input",
        f"upload got {huge.status_code}; statuses {spread}; 5xx other than 503: {len(fives)}; tracebacks: {tracebacks}; "
        f"internal errors logged: {internal}; " + "; ".join(f.text for f in found),
        forged_accepted=len(fives) + tracebacks + internal + sum(f.forged for f in found),
        ok=ok,
    )
