"""GitHub Actions OIDC: RS256 tokens with GitHub's claim set, verified against a local issuer's JWKS."""

from __future__ import annotations

import time
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.credentials import AUDIENCE, REPOSITORY, OidcIssuer, github_claims, hs256
from tests.support.http_checks import assert_refused, bearer, tick
from tests.support.logs import LogLines


def _settings(database_url: str, issuer: OidcIssuer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "github_oidc_repository": REPOSITORY,
        "github_oidc_audience": AUDIENCE,
        "github_oidc_issuer": issuer.url,
    }
    values.update(overrides)
    return Settings(**values)


def test_a_token_from_the_repository_ticks_and_the_jwks_is_fetched_once(
    database_url: str, issuer: OidcIssuer, live_app: Any
) -> None:
    with live_app(_settings(database_url, issuer)) as base:
        for _ in range(3):
            response = tick(base, headers=bearer(issuer.token()))
            assert response.status_code == 200, response.text
            assert "jobs" in response.json()
    assert issuer.jwks_fetches() == 1


def test_claims_decide_not_the_sub_string(database_url: str, issuer: OidcIssuer, live_app: Any) -> None:
    # GitHub's newer immutable subjects carry numeric ids; only the repository claim matters.
    immutable_sub = f"repo:{REPOSITORY}@74:ref:refs/heads/main"
    spoofed_sub = f"repo:{REPOSITORY}:ref:refs/heads/main"
    with live_app(_settings(database_url, issuer)) as base:
        assert tick(base, headers=bearer(issuer.token(sub=immutable_sub))).status_code == 200
        assert tick(base, headers=bearer(issuer.token(repository="Octo-Org/Octo-Repo"))).status_code == 200
        assert_refused(tick(base, headers=bearer(issuer.token(sub=spoofed_sub, repository="evil-org/octo-repo"))), base)


def wrong_claims(now: int) -> dict[str, tuple[dict[str, Any], str]]:
    """Each case: the claims changed from a valid token, and the check the server's log must name.

    Built when the test runs (times made at import go stale in a long suite).
    """
    return {
        "another repository": ({"repository": "octo-org/other-repo"}, "expected repository 'octo-org/octo-repo'"),
        "a lookalike repository name": ({"repository": "octo-org/octo-repo-fork"}, "expected repository"),
        "no repository claim": ({"repository": None}, 'missing the "repository" claim'),
        "another audience": ({"aud": "https://other.example.com"}, "InvalidAudienceError"),
        "the default audience of a token request": ({"aud": "https://github.com/octo-org"}, "InvalidAudienceError"),
        "another issuer": ({"iss": "https://token.actions.example.net"}, "InvalidIssuerError"),
        "expired": ({"iat": now - 900, "nbf": now - 900, "exp": now - 300}, "Signature has expired"),
        "not valid yet": ({"nbf": now + 600}, "ImmatureSignatureError"),
    }


def test_a_token_with_the_wrong_claims_is_refused(
    database_url: str, issuer: OidcIssuer, live_app: Any, crontick_log: LogLines
) -> None:
    with live_app(_settings(database_url, issuer)) as base:
        for case, (claims, reason) in wrong_claims(int(time.time())).items():
            token = issuer.token(**claims)
            logged = len(crontick_log.lines)
            assert_refused(tick(base, headers=bearer(token)), base)
            assert reason in crontick_log.reasons(logged), case
            assert token not in crontick_log.text, case


def test_ref_and_workflow_allow_lists(
    database_url: str, issuer: OidcIssuer, live_app: Any, crontick_log: LogLines
) -> None:
    settings = _settings(
        database_url,
        issuer,
        github_oidc_refs=("refs/heads/main",),
        github_oidc_workflows=(".github/workflows/tick-oidc.yml", "nightly"),
    )
    with live_app(settings) as base:
        assert tick(base, headers=bearer(issuer.token())).status_code == 200  # matched by workflow file path
        # The `workflow` claim is the YAML name:, which any workflow author picks: it never matches.
        assert_refused(tick(base, headers=bearer(issuer.token(workflow="nightly", workflow_ref=None))), base)
        other = f"{REPOSITORY}/.github/workflows/pwn.yml@refs/heads/feature"
        assert_refused(
            tick(base, headers=bearer(issuer.token(workflow=".github/workflows/tick-oidc.yml", workflow_ref=other))),
            base,
        )
        assert_refused(tick(base, headers=bearer(issuer.token(ref="refs/heads/feature"))), base)
        other_file = f"{REPOSITORY}/.github/workflows/other.yml@refs/heads/main"
        assert_refused(tick(base, headers=bearer(issuer.token(workflow="other", workflow_ref=other_file))), base)
        # A workflow_ref in another repository never counts, even with the allowed path (same-length name on purpose).
        foreign = "evil-org/octo-repo/.github/workflows/tick-oidc.yml@refs/heads/main"
        assert_refused(tick(base, headers=bearer(issuer.token(workflow="other", workflow_ref=foreign))), base)
    reasons = crontick_log.refusals()
    assert "expected ref in CRONTICK_GITHUB_OIDC_REFS ['refs/heads/main'], got: 'refs/heads/feature'" in reasons
    assert "expected a workflow_ref path in CRONTICK_GITHUB_OIDC_WORKFLOWS" in reasons


def test_forged_keys_and_algorithms_are_refused(
    database_url: str, issuer: OidcIssuer, other_rsa_key: rsa.RSAPrivateKey, live_app: Any, crontick_log: LogLines
) -> None:
    public_pem = issuer.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with live_app(_settings(database_url, issuer)) as base:
        same_kid_other_key = issuer.token(key=other_rsa_key)
        unknown_kid = issuer.token(key=other_rsa_key, kid="attacker-key")
        # The classic confusion: HS256 keyed with the issuer's public key, which anyone can download.
        hs256_with_public_key = hs256(github_claims(issuer.url), public_pem.decode(), kid=issuer.kid)
        for token in (same_kid_other_key, unknown_kid, hs256_with_public_key):
            assert_refused(tick(base, headers=bearer(token)), base)
    reasons = crontick_log.refusals()
    assert "InvalidSignatureError" in reasons
    assert "expected a key id published in" in reasons
    # An unknown kid right after a fetch does not make every request refetch the JWKS.
    assert issuer.jwks_fetches() == 1


def test_an_unreachable_jwks_fails_closed(
    database_url: str, issuer: OidcIssuer, live_app: Any, crontick_log: LogLines
) -> None:
    settings = _settings(database_url, issuer, github_oidc_issuer=issuer.url + "/nowhere")
    with live_app(settings) as base:
        assert_refused(tick(base, headers=bearer(issuer.token(iss=issuer.url + "/nowhere"))), base)
    assert "could not load the JWKS from" in crontick_log.refusals()


def test_oidc_and_the_bearer_secret_work_side_by_side(database_url: str, issuer: OidcIssuer, live_app: Any) -> None:
    with live_app(_settings(database_url, issuer, cron_secret=TEST_SECRET)) as base:
        assert tick(base, headers=bearer(issuer.token())).status_code == 200
        assert tick(base, headers=bearer(TEST_SECRET)).status_code == 200
        assert_refused(tick(base, headers=bearer(issuer.token(repository="octo-org/other"))), base)
