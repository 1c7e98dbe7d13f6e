"""JWKS fetching under failure and abuse: last good keys kept, one fetch in flight, failures backed off."""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from werkzeug import Response

from crontick.auth import jwks
from crontick.settings import Settings
from tests.support import bombs
from tests.support.credentials import AUDIENCE, JWKS_PATH, REPOSITORY, OidcIssuer, github_claims
from tests.support.http_checks import TICK_PATH, assert_refused, bearer, tick
from tests.support.logs import LogLines


def _settings(database_url: str, issuer: OidcIssuer) -> Settings:
    return Settings(
        database_url=database_url,
        github_oidc_repository=REPOSITORY,
        github_oidc_audience=AUDIENCE,
        github_oidc_issuer=issuer.url,
    )


def _break(issuer: OidcIssuer) -> None:
    """From now on the issuer's JWKS endpoint answers 503."""
    issuer.server.clear_all_handlers()
    issuer.server.expect_request(JWKS_PATH, method="GET").respond_with_data("down", status=503)


def test_expired_keys_are_kept_when_the_refetch_fails(
    database_url: str, issuer: OidcIssuer, live_app: Any, monkeypatch: pytest.MonkeyPatch, crontick_log: LogLines
) -> None:
    monkeypatch.setattr(jwks, "TTL_SECONDS", 0.0)  # every cached key set is already past its lifetime
    monkeypatch.setattr(jwks, "REFETCH_MIN_SECONDS", 0.0)  # and may be refetched at once
    with live_app(_settings(database_url, issuer)) as base:
        assert tick(base, headers=bearer(issuer.token())).status_code == 200
        _break(issuer)
        for _ in range(5):
            response = tick(base, headers=bearer(issuer.token()))
            assert response.status_code == 200, response.text
    # One good fetch, one failed refetch, then the 5 s backoff: no fetch per request.
    assert issuer.jwks_fetches() == 2
    assert '"event": "jwks_fetch_failed"' in crontick_log.text and '"keeping_keys": true' in crontick_log.text


def test_a_failing_jwks_is_not_fetched_for_every_request(database_url: str, issuer: OidcIssuer, live_app: Any) -> None:
    _break(issuer)
    with live_app(_settings(database_url, issuer)) as base:
        for _ in range(10):
            assert_refused(tick(base, headers=bearer(issuer.token())), base)
    assert issuer.jwks_fetches() == 1


def test_anonymous_jwt_shaped_bearers_cause_one_fetch(
    database_url: str, issuer: OidcIssuer, other_rsa_key: rsa.RSAPrivateKey, live_app: Any
) -> None:
    """40 requests at once, each with a made-up kid: the fetches are serialised and then backed off."""
    forged = [
        jwt.encode(github_claims(issuer.url), other_rsa_key, algorithm="RS256", headers={"kid": f"kid-{n}"})
        for n in range(40)
    ]

    async def attack(base: str) -> list[int]:
        async with httpx.AsyncClient(timeout=30) as client:
            answers = await asyncio.gather(*(client.post(base + TICK_PATH, headers=bearer(t)) for t in forged))
        return [a.status_code for a in answers]

    with live_app(_settings(database_url, issuer)) as base:
        assert asyncio.run(attack(base)) == [401] * len(forged)
        assert tick(base, headers=bearer(issuer.token())).status_code == 200  # the real key still works
    assert issuer.jwks_fetches() == 1


def test_a_jwks_answer_that_is_a_decompression_bomb_is_refused_unread(
    database_url: str, issuer: OidcIssuer, live_app: Any, crontick_log: LogLines
) -> None:
    """A key set sent as `gzip, gzip` (64 MiB from 269 bytes) is not decoded: no keys, a 401, the reason logged."""
    issuer.server.clear_all_handlers()
    issuer.server.expect_request(JWKS_PATH, method="GET").respond_with_response(bombs.stacked_bomb(200))
    with live_app(_settings(database_url, issuer)) as base:
        assert_refused(tick(base, headers=bearer(issuer.token())), base)
    [failed] = [json.loads(line) for line in crontick_log.lines if '"event": "jwks_fetch_failed"' in line]
    assert "got: 'gzip, gzip'; its body was not read" in failed["detail"]
    [(request, _)] = issuer.server.log
    assert request.headers["Accept-Encoding"] == "identity"


def test_an_honestly_gzipped_jwks_still_works(
    database_url: str, issuer: OidcIssuer, rsa_key: rsa.RSAPrivateKey, live_app: Any
) -> None:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key())) | {"kid": issuer.kid, "alg": "RS256"}
    issuer.server.clear_all_handlers()
    issuer.server.expect_request(JWKS_PATH, method="GET").respond_with_response(
        Response(gzip.compress(json.dumps({"keys": [jwk]}).encode()), 200, headers={"Content-Encoding": "gzip"})
    )
    with live_app(_settings(database_url, issuer)) as base:
        assert tick(base, headers=bearer(issuer.token())).status_code == 200
