"""Signed credentials authorise one tick each (QStash and GitHub OIDC replays are refused); OIDC pins
the workflow file and the repository id."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.settings import Settings
from tests.support.credentials import AUDIENCE, QSTASH_CURRENT, QSTASH_NEXT, REPOSITORY, OidcIssuer, qstash_signature
from tests.support.http_checks import TICK_PATH, assert_refused, bearer, tick
from tests.support.logs import LogLines

BODY = b'{"from": "qstash"}'


def _uses(conn: psycopg.Connection[Any], prefix: str) -> int:
    return int(
        conn.execute("select count(*) from crontick_token_uses where jti like %s", (prefix + "%",)).fetchone()[0]
    )  # type: ignore[index]


def _oidc(database_url: str, issuer: OidcIssuer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "github_oidc_repository": REPOSITORY,
        "github_oidc_audience": AUDIENCE,
        "github_oidc_issuer": issuer.url,
    }
    return Settings(**{**values, **overrides})


def test_a_qstash_signature_ticks_once(
    database_url: str, conn: psycopg.Connection[Any], live_app: Any, crontick_log: LogLines
) -> None:
    settings = Settings(
        database_url=database_url,
        qstash_current_signing_key=QSTASH_CURRENT,
        qstash_next_signing_key=QSTASH_NEXT,
        trust_forwarded=True,
    )
    with live_app(settings) as base:
        signature = qstash_signature(QSTASH_CURRENT, base + TICK_PATH, BODY)
        assert tick(base, headers={"Upstash-Signature": signature}, body=BODY).status_code == 200
        assert_refused(tick(base, headers={"Upstash-Signature": signature}, body=BODY), base)
        # Signed with the next key, replayed: refused too (the jti is recorded whichever key verified it).
        rotated = qstash_signature(QSTASH_NEXT, base + TICK_PATH, BODY)
        assert tick(base, headers={"Upstash-Signature": rotated}, body=BODY).status_code == 200
        assert_refused(tick(base, headers={"Upstash-Signature": rotated}, body=BODY), base)
        # A forged signature's jti is never recorded: it cannot burn a real one in advance.
        forged = qstash_signature("sig_" + "f" * 28, base + TICK_PATH, BODY, jti="jwt_future")
        assert_refused(tick(base, headers={"Upstash-Signature": forged}, body=BODY), base)
        # No jti at all: refused, since its replay could not be detected.
        assert_refused(
            tick(
                base,
                headers={"Upstash-Signature": qstash_signature(QSTASH_CURRENT, base + TICK_PATH, BODY, jti=None)},
                body=BODY,
            ),
            base,
        )
    assert _uses(conn, "qstash:") == 2
    assert "qstash: jti already used" in crontick_log.refusals()


def test_a_github_oidc_token_ticks_once(
    database_url: str, conn: psycopg.Connection[Any], issuer: OidcIssuer, live_app: Any, crontick_log: LogLines
) -> None:
    with live_app(_oidc(database_url, issuer)) as base:
        token = issuer.token()
        assert tick(base, headers=bearer(token)).status_code == 200
        assert_refused(tick(base, method="GET", headers=bearer(token)), base)
        assert_refused(tick(base, headers=bearer(issuer.token(jti=None))), base)
    assert _uses(conn, "github:") == 1
    assert "github_oidc: jti already used" in crontick_log.refusals()


def test_the_repository_id_can_be_pinned(
    database_url: str, issuer: OidcIssuer, live_app: Any, crontick_log: LogLines
) -> None:
    with live_app(_oidc(database_url, issuer, github_oidc_repository_id="74")) as base:
        assert tick(base, headers=bearer(issuer.token())).status_code == 200
        # Same owner/name, deleted and re-created: a new numeric id.
        assert_refused(tick(base, headers=bearer(issuer.token(repository_id="9001"))), base)
        assert_refused(tick(base, headers=bearer(issuer.token(repository_id=None))), base)
    assert "expected repository_id '74'" in crontick_log.refusals()


def test_repository_id_is_read_from_the_environment() -> None:
    env = {
        "CRONTICK_GITHUB_OIDC_REPOSITORY": REPOSITORY,
        "CRONTICK_GITHUB_OIDC_AUDIENCE": AUDIENCE,
        "CRONTICK_GITHUB_OIDC_REPOSITORY_ID": "74",
    }
    assert Settings.from_env(env).github_oidc_repository_id == "74"
