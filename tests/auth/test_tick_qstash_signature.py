"""Upstash-Signature as QStash documents it, signed here with hmac and cross-checked with qstash's Receiver."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from qstash import Receiver
from qstash.errors import SignatureError
from starlette.requests import Request

from crontick.auth import tick as auth
from crontick.errors import ConfigError
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.credentials import QSTASH_CURRENT, QSTASH_NEXT, qstash_signature
from tests.support.http_checks import TICK_PATH, assert_refused, tick
from tests.support.logs import LogLines

RAW_BODY = b'{"job":  "tick", "note": "spacing kept as sent"}'
UNKNOWN_KEY = "sig_3nKmXqZ8dWbH2vFj6tLcR9pYs4Ga"


def _settings(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "qstash_current_signing_key": QSTASH_CURRENT,
        "qstash_next_signing_key": QSTASH_NEXT,
        # The live app's port is chosen at start, so these tests trust the Host header as the
        # origin; no forwarded header is sent unless a test says so.
        "trust_forwarded": True,
    }
    values.update(overrides)
    return Settings(**values)


def _receiver_accepts(signature: str, body: bytes, url: str) -> bool:
    try:
        Receiver(QSTASH_CURRENT, QSTASH_NEXT).verify(signature=signature, body=body.decode(), url=url)
    except SignatureError:
        return False
    return True


def _now() -> int:
    return int(time.time())


# Each case: (key, what is signed, what is sent, claim overrides, pad the body hash?, accepted?)
CASES: dict[str, tuple[str, bytes, bytes, dict[str, Any], bool, bool]] = {
    "current key": (QSTASH_CURRENT, RAW_BODY, RAW_BODY, {}, True, True),
    "next key, after a rotation": (QSTASH_NEXT, RAW_BODY, RAW_BODY, {}, True, True),
    "body hash without padding": (QSTASH_CURRENT, RAW_BODY, RAW_BODY, {}, False, True),
    "empty body (a schedule without one)": (QSTASH_CURRENT, b"", b"", {}, True, True),
    "a key QStash never gave us": (UNKNOWN_KEY, RAW_BODY, RAW_BODY, {}, True, False),
    "body re-serialised after signing": (
        QSTASH_CURRENT,
        RAW_BODY,
        json.dumps(json.loads(RAW_BODY)).encode(),
        {},
        True,
        False,
    ),
    "body changed": (QSTASH_CURRENT, RAW_BODY, b'{"job": "drop tables"}', {}, True, False),
    "expired": (
        QSTASH_CURRENT,
        RAW_BODY,
        RAW_BODY,
        {"iat": _now() - 420, "nbf": _now() - 420, "exp": _now() - 120},
        True,
        False,
    ),
    "not valid yet": (
        QSTASH_CURRENT,
        RAW_BODY,
        RAW_BODY,
        {"nbf": _now() + 3600},
        True,
        False,
    ),  # far ahead: CASES is built at collection, minutes before it runs in a full suite
    "another issuer": (QSTASH_CURRENT, RAW_BODY, RAW_BODY, {"iss": "NotUpstash"}, True, False),
    "no body claim": (QSTASH_CURRENT, RAW_BODY, RAW_BODY, {"body": None}, True, False),
}


def test_signature_verdicts_match_the_spec_and_qstash_receiver(database_url: str, live_app: Any) -> None:
    with live_app(_settings(database_url)) as base:
        url = base + TICK_PATH
        for case, (key, signed, sent, overrides, pad, accepted) in CASES.items():
            signature = qstash_signature(key, url, signed, pad=pad, **overrides)
            if "body" in overrides:
                assert not accepted, case  # the Receiver raises KeyError, not SignatureError, on a missing claim
            else:
                assert _receiver_accepts(signature, sent, url) is accepted, case
            response = tick(
                base, headers={"Upstash-Signature": signature, "Content-Type": "application/json"}, body=sent
            )
            if accepted:
                assert response.status_code == 200, (case, response.text)
                assert "jobs" in response.json(), case
            else:
                assert_refused(response, base)


def test_sub_must_be_the_url_called_including_its_query(
    database_url: str, live_app: Any, crontick_log: LogLines
) -> None:
    with live_app(_settings(database_url)) as base:
        other_path = qstash_signature(QSTASH_CURRENT, base + "/api/other", RAW_BODY)
        assert not _receiver_accepts(other_path, RAW_BODY, base + TICK_PATH)
        assert_refused(tick(base, headers={"Upstash-Signature": other_path}, body=RAW_BODY), base)
        with_query = qstash_signature(QSTASH_CURRENT, base + TICK_PATH + "?from=qstash", RAW_BODY)
        response = tick(base, headers={"Upstash-Signature": with_query}, body=RAW_BODY, path=TICK_PATH + "?from=qstash")
        assert response.status_code == 200, response.text
    reasons = crontick_log.refusals()
    assert "expected sub = the URL called" in reasons
    assert other_path not in crontick_log.text


def test_behind_a_trusted_proxy_the_forwarded_scheme_and_host_are_the_url(database_url: str, live_app: Any) -> None:
    public = "https://app.example.com" + TICK_PATH
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "app.example.com"}
    with live_app(_settings(database_url, trust_forwarded=True)) as base:
        signature = qstash_signature(QSTASH_CURRENT, public, RAW_BODY)
        assert tick(base, headers={"Upstash-Signature": signature, **forwarded}, body=RAW_BODY).status_code == 200
        assert_refused(tick(base, headers={"Upstash-Signature": signature}, body=RAW_BODY), base)


def test_forwarded_headers_are_ignored_unless_trusted(database_url: str, live_app: Any, crontick_log: LogLines) -> None:
    """The review's attack: a QStash signature made for another app on the same Upstash account."""
    spoofed = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "other-app.example.com"}
    for_other = qstash_signature(QSTASH_CURRENT, "https://other-app.example.com" + TICK_PATH, RAW_BODY)
    with live_app(_settings(database_url, trust_forwarded=False)) as base:
        assert_refused(tick(base, headers={"Upstash-Signature": for_other, **spoofed}, body=RAW_BODY), base)
        # Even a signature for this very URL is refused while no trusted URL is configured.
        for_here = qstash_signature(QSTASH_CURRENT, base + TICK_PATH, RAW_BODY)
        assert_refused(tick(base, headers={"Upstash-Signature": for_here}, body=RAW_BODY), base)
    assert "qstash: off: a signed credential needs CRONTICK_PUBLIC_URL" in crontick_log.refusals()


def test_qstash_without_a_public_url_fails_at_startup() -> None:
    env = {"QSTASH_CURRENT_SIGNING_KEY": QSTASH_CURRENT}
    with pytest.raises(ConfigError, match="CRONTICK_PUBLIC_URL: expected the base URL QStash calls"):
        Settings.from_env(env)
    assert Settings.from_env({**env, "CRONTICK_PUBLIC_URL": "https://app.example.com"}).public_url
    assert Settings.from_env({**env, "CRONTICK_TRUST_FORWARDED": "1"}).trust_forwarded


def test_crontick_public_url_wins_over_forwarded_headers(database_url: str, live_app: Any) -> None:
    spoofed = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "other-app.example.com"}
    settings = _settings(database_url, public_url="https://app.example.com")
    with live_app(settings) as base:
        for_public = qstash_signature(QSTASH_CURRENT, "https://app.example.com" + TICK_PATH, RAW_BODY)
        assert tick(base, headers={"Upstash-Signature": for_public, **spoofed}, body=RAW_BODY).status_code == 200
        # A signature QStash made for another app on the same account must not be replayable here.
        for_other = qstash_signature(QSTASH_CURRENT, "https://other-app.example.com" + TICK_PATH, RAW_BODY)
        assert_refused(tick(base, headers={"Upstash-Signature": for_other, **spoofed}, body=RAW_BODY), base)


def test_qstash_and_the_bearer_secret_work_side_by_side(
    database_url: str, live_app: Any, crontick_log: LogLines
) -> None:
    with live_app(_settings(database_url, cron_secret=TEST_SECRET)) as base:
        signature = qstash_signature(QSTASH_CURRENT, base + TICK_PATH, RAW_BODY)
        assert tick(base, headers={"Upstash-Signature": signature}, body=RAW_BODY).status_code == 200
        assert tick(base, headers={"Authorization": f"Bearer {TEST_SECRET}"}).status_code == 200
        assert_refused(tick(base, body=RAW_BODY), base)
    assert "qstash: no Upstash-Signature header" in crontick_log.refusals()


def _request(headers: dict[str, str], scheme: str = "http") -> Request:
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": scheme,
        "path": TICK_PATH,
        "raw_path": TICK_PATH.encode(),
        "query_string": b"",
        "server": ("10.0.0.5", 8000),
        "client": ("10.0.0.1", 40000),
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope)


@pytest.mark.parametrize(
    ("headers", "public_url", "trust", "url"),
    [
        ({"host": "10.0.0.5:8000"}, None, True, "http://10.0.0.5:8000/api/cron/tick"),
        # A proxy that terminates TLS, as Vercel, Lambda URLs, Cloud Run and Fly do; the first hop wins.
        (
            {
                "host": "10.0.0.5:8000",
                "x-forwarded-proto": "https, http",
                "x-forwarded-host": "app.example.com, internal",
            },
            None,
            True,
            "https://app.example.com/api/cron/tick",
        ),
        ({"host": "10.0.0.5:8000", "x-forwarded-proto": "https"}, None, True, "https://10.0.0.5:8000/api/cron/tick"),
        # Not trusted (the default): forwarded headers change nothing.
        (
            {"host": "10.0.0.5:8000", "x-forwarded-proto": "https", "x-forwarded-host": "app.example.com"},
            None,
            False,
            "http://10.0.0.5:8000/api/cron/tick",
        ),
        # CRONTICK_PUBLIC_URL ignores what the request says, and may carry an API Gateway stage.
        (
            {"host": "10.0.0.5:8000", "x-forwarded-host": "spoofed.example.com"},
            "https://abc.execute-api.us-east-1.amazonaws.com/prod",
            True,
            "https://abc.execute-api.us-east-1.amazonaws.com/prod/api/cron/tick",
        ),
    ],
)
def test_the_url_qstash_signed_is_rebuilt_from_the_request_or_the_setting(
    headers: dict[str, str], public_url: str | None, trust: bool, url: str
) -> None:
    creds = auth.credentials(_request(headers), b"", Settings(public_url=public_url, trust_forwarded=trust))
    assert creds.url == url
