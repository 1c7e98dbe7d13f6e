"""Short-lived HS256 tick tokens signed with CRON_SECRET: at most 5 minutes, for this app, accepted once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import psycopg
import pytest

from crontick.app import create_app
from crontick.cli import main
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.credentials import tick_token
from tests.support.http_checks import assert_refused, bearer, tick
from tests.support.logs import LogLines
from tests.support.servers import free_port, serve

OTHER_SECRET = "another-secret-" + "y" * 32


def _settings(database_url: str, **overrides: Any) -> Settings:
    return Settings(database_url=database_url, cron_secret=TEST_SECRET, **overrides)


@contextmanager
def _live(database_url: str) -> Iterator[str]:
    """The live app with CRONTICK_PUBLIC_URL set to its own loopback address (tokens are off without one)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with serve(create_app(_settings(database_url, public_url=base)), port) as url:
        yield url


def _uses(conn: psycopg.Connection[Any]) -> int:
    return int(conn.execute("select count(*) from crontick_token_uses").fetchone()[0])  # type: ignore[index]


def test_a_token_ticks_once_and_its_replay_is_refused(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any, crontick_log: LogLines
) -> None:
    with _live(database_url) as base:
        token = tick_token(TEST_SECRET, base)
        first = tick(base, headers=bearer(token))
        assert first.status_code == 200, first.text
        assert set(first.json()) >= {"jobs", "reminders", "more"}
        replay = tick(base, method="GET", headers=bearer(token))
        assert_refused(replay, base)
    assert _uses(conn) == 1
    reasons = crontick_log.refusals()
    assert "token: jti already used" in reasons
    assert token not in crontick_log.text and token.split(".")[2] not in crontick_log.text


def test_tokens_are_off_without_a_trusted_url(database_url: str, live_app: Any, crontick_log: LogLines) -> None:
    """Without CRONTICK_PUBLIC_URL the audience would come from the request's own headers."""
    with live_app(_settings(database_url)) as base:
        assert_refused(tick(base, headers=bearer(tick_token(TEST_SECRET, base))), base)
        assert tick(base, headers=bearer(TEST_SECRET)).status_code == 200  # the plain secret still works
    assert "token: off: a signed credential needs CRONTICK_PUBLIC_URL" in crontick_log.refusals()


def test_the_audience_may_be_the_base_url_or_the_tick_url(database_url: str, live_app: Any) -> None:
    with _live(database_url) as base:
        for audience in (base, base + "/api/cron/tick"):
            response = tick(base, method="GET", headers=bearer(tick_token(TEST_SECRET, audience)))
            assert response.status_code == 200, (audience, response.text)


def outside_the_rules(now: int) -> dict[str, tuple[dict[str, Any], str]]:
    """Each case: the claims changed from a valid token, and the check the server's log must name.

    Built from the time the test runs, not the time the module was imported: in a long suite a
    token made at import time has expired before this test sends it, and the wrong check refuses it.
    """
    return {
        "lives longer than 5 minutes": ({"iat": now, "exp": now + 301}, "lifetime (exp - iat) of at most 300 s"),
        "issued in the future to stretch exp": ({"iat": now + 240, "exp": now + 540}, "not yet valid (iat)"),
        "expired": ({"iat": now - 400, "exp": now - 100}, "Signature has expired"),
        "for another app": ({"aud": "https://other.example.com"}, "Audience doesn't match"),
        "without jti": ({"jti": None}, 'missing the "jti" claim'),
        "without exp": ({"exp": None}, 'missing the "exp" claim'),
        "without iat": ({"iat": None}, 'missing the "iat" claim'),
        "without aud": ({"aud": None}, 'missing the "aud" claim'),
    }


def test_a_token_outside_the_rules_is_refused(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any, crontick_log: LogLines
) -> None:
    with _live(database_url) as base:
        for case, (overrides, reason) in outside_the_rules(int(time.time())).items():
            logged = len(crontick_log.lines)
            assert_refused(tick(base, headers=bearer(tick_token(TEST_SECRET, base, **overrides))), base)
            assert reason in crontick_log.reasons(logged), case
    assert _uses(conn) == 0


def test_a_token_signed_with_another_secret_or_unsigned_is_refused(database_url: str, live_app: Any) -> None:
    with _live(database_url) as base:
        forged = tick_token(OTHER_SECRET, base)
        header, payload, _ = tick_token(TEST_SECRET, base).split(".")
        unsigned = f"{header}.{payload}."
        now = int(time.time())
        none_alg = jwt.encode({"aud": base, "iat": now, "exp": now + 60, "jti": "x"}, None, algorithm="none")
        for token in (forged, unsigned, none_alg):
            assert_refused(tick(base, headers=bearer(token)), base)


def test_expired_jtis_are_pruned_a_bounded_number_at_a_time(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any
) -> None:
    past = datetime.now(UTC) - timedelta(hours=1)
    conn.execute(
        "insert into crontick_token_uses (jti, expires_at) select 'old-' || i, %(past)s from generate_series(1, 150) i",
        {"past": past},
    )
    conn.execute("insert into crontick_token_uses (jti, expires_at) values ('live', now() + interval '4 minutes')")
    expired = "select count(*) from crontick_token_uses where expires_at < now()"
    with _live(database_url) as base:
        assert tick(base, headers=bearer(tick_token(TEST_SECRET, base))).status_code == 200
        assert conn.execute(expired).fetchone()[0] == 50  # type: ignore[index]
        assert tick(base, headers=bearer(tick_token(TEST_SECRET, base))).status_code == 200
        assert conn.execute(expired).fetchone()[0] == 0  # type: ignore[index]
    assert _uses(conn) == 3  # 'live' and the two tokens just used


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("CRON", "DATABASE_URL"))}
    return subprocess.run(
        [sys.executable, "-m", "crontick.cli.main", "token", *args],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _curl(url: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "curl",
            "--silent",
            "--show-error",
            "--fail-with-body",
            "--max-time",
            "30",
            "--request",
            "POST",
            "--header",
            f"Authorization: Bearer {token}",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_crontick_token_output_ticks_with_curl_once(database_url: str, live_app: Any) -> None:
    with _live(database_url) as base:
        made = _cli("--audience", base, "--ttl", "120", CRON_SECRET=TEST_SECRET)
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip()
        claims = jwt.decode(token, TEST_SECRET, algorithms=["HS256"], audience=base)
        assert claims["exp"] - claims["iat"] == 120 and claims["jti"]
        first = _curl(base + "/api/cron/tick", token)
        assert first.returncode == 0, first.stdout + first.stderr
        assert '"more"' in first.stdout
        replay = _curl(base + "/api/cron/tick", token)
        assert replay.returncode == 22 and '"unauthorized"' in replay.stdout
        # The audience defaults to CRONTICK_PUBLIC_URL.
        made = _cli(CRON_SECRET=TEST_SECRET, CRONTICK_PUBLIC_URL=base + "/")
        assert made.returncode == 0, made.stderr
        assert _curl(base + "/api/cron/tick", made.stdout.strip()).returncode == 0


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--audience", "https://app.example.com", "--ttl", "301"],
            {"CRON_SECRET": TEST_SECRET},
            "--ttl: expected 1 to 300 seconds, got: 301",
        ),
        ([], {"CRON_SECRET": TEST_SECRET}, "--audience: expected the app's base URL"),
        (["--audience", "https://app.example.com"], {}, "CRON_SECRET: expected the secret"),
    ],
)
def test_crontick_token_refuses_long_lives_and_missing_settings(
    args: list[str],
    env: dict[str, str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("CRON_SECRET", "CRONTICK_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main.main(["token", *args]) == 1
    out, err = capsys.readouterr()
    assert message in err
    assert out == ""
