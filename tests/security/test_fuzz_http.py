"""Hypothesis-driven requests (methods, paths, headers, bodies) over real HTTP: never a 5xx other than
a 503, never a traceback, never a secret in the answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crontick.app import create_app
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.databases import fresh_database
from tests.support.servers import raw_request, serve

QSTASH_KEY = "sig_" + "z" * 28
header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"), max_size=200)
header_name = st.sampled_from(
    [
        "authorization",
        "upstash-signature",
        "content-type",
        "x-forwarded-host",
        "x-forwarded-proto",
        "x-anything",
        "expect",
    ]
)


@pytest.fixture(scope="module")
def base(admin_url: str, template_name: str) -> Iterator[str]:
    """One live app for every example, with QStash on (so bodies are read) and a 1 KiB body cap."""
    with fresh_database(admin_url, template_name) as url:
        app_settings = Settings(
            database_url=url,
            cron_secret=TEST_SECRET,
            qstash_current_signing_key=QSTASH_KEY,
            public_url="https://app.example.com",
            max_body_bytes=1024,
        )
        with serve(create_app(app_settings)) as served:
            yield served


@settings(max_examples=150, deadline=None)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE"]),
    path=st.sampled_from(["/api/cron/tick", "/api/health", "/api/health?strict=1", "/api/cron/tick?x=%ff", "/nope"]),
    headers=st.lists(st.tuples(header_name, header_text), max_size=6),
    body=st.binary(max_size=2048),
)
def test_fuzzed_requests_never_get_a_5xx_or_a_traceback(
    base: str, method: str, path: str, headers: list[tuple[str, str]], body: bytes
) -> None:
    status, text = raw_request(base, method, path, [(k, v.strip()) for k, v in headers], body)
    assert status != 0, "the server closed the connection without an answer"
    assert status < 500 or status == 503, (status, text[-500:])
    assert "Traceback" not in text and TEST_SECRET not in text and QSTASH_KEY not in text
