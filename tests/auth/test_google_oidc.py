"""Google's OIDC (Cloud Tasks' and Cloud Scheduler's calls): RS256 ID tokens with Google's claim set, verified
against a local issuer's JWKS; off until CRONTICK_GOOGLE_OIDC_EMAILS is set; a replay is refused."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

from crontick.errors import ConfigError
from crontick.settings import Settings
from tests.support.credentials import JWKS_PATH, OidcIssuer
from tests.support.http_checks import assert_refused, bearer, tick
from tests.support.logs import LogLines

AUDIENCE = "https://app.example.com/api/cron/tick"
ACCOUNT = "crontick-tasks@octo-project.iam.gserviceaccount.com"


def google_token(issuer: OidcIssuer, **overrides: Any) -> str:
    """An ID token shaped as Google's for a service account (Cloud Tasks' oidcToken): no jti, as Google's have none."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "aud": AUDIENCE,
        "azp": "117826213744850153911",
        "email": ACCOUNT,
        "email_verified": True,
        "exp": now + 3600,
        "iat": now,
        "iss": issuer.url,
        "sub": "117826213744850153911",
    }
    claims.update(overrides)
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode(claims, issuer.key, algorithm="RS256", headers={"kid": issuer.kid})


def _settings(database_url: str, issuer: OidcIssuer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "google_oidc_emails": (ACCOUNT,),
        "google_oidc_audience": AUDIENCE,
        "google_oidc_issuer": issuer.url,
        "google_oidc_jwks_url": issuer.url + JWKS_PATH,
    }
    values.update(overrides)
    return Settings(**values)


def test_a_token_of_the_service_account_ticks_once(database_url: str, issuer: OidcIssuer, live_app: Any) -> None:
    with live_app(_settings(database_url, issuer)) as base:
        token = google_token(issuer)
        response = tick(base, headers=bearer(token))
        assert response.status_code == 200, response.text
        assert "jobs" in response.json()
        assert_refused(tick(base, headers=bearer(token)), base)  # its replay
        assert tick(base, headers=bearer(google_token(issuer, email=ACCOUNT.upper()))).status_code == 200
    assert issuer.jwks_fetches() == 1


def test_the_wrong_claims_are_refused(
    database_url: str, issuer: OidcIssuer, live_app: Any, crontick_log: LogLines
) -> None:
    now = int(time.time())
    cases = {
        "another account": ({"email": "someone@evil.iam.gserviceaccount.com"}, "CRONTICK_GOOGLE_OIDC_EMAILS"),
        "an unverified email": ({"email_verified": False}, "email_verified"),
        "no email": ({"email": None}, 'missing the "email" claim'),
        "another audience": ({"aud": "https://other.example.com"}, "InvalidAudienceError"),
        "another issuer": ({"iss": "https://accounts.example.net"}, "InvalidIssuerError"),
        "expired": ({"iat": now - 7200, "exp": now - 3600}, "Signature has expired"),
    }
    with live_app(_settings(database_url, issuer)) as base:
        for case, (claims, reason) in cases.items():
            token = google_token(issuer, **claims)
            logged = len(crontick_log.lines)
            assert_refused(tick(base, headers=bearer(token)), base)
            assert reason in crontick_log.reasons(logged), case
            assert token not in crontick_log.text, case


def test_a_token_signed_by_another_key_is_refused(
    database_url: str, issuer: OidcIssuer, other_rsa_key: Any, live_app: Any
) -> None:
    forged = jwt.encode({"aud": AUDIENCE, "email": ACCOUNT, "email_verified": True, "iss": issuer.url,
                         "iat": int(time.time()), "exp": int(time.time()) + 600}, other_rsa_key, algorithm="RS256",
                        headers={"kid": issuer.kid})  # fmt: skip
    with live_app(_settings(database_url, issuer)) as base:
        assert_refused(tick(base, headers=bearer(forged)), base)


def test_off_until_configured(database_url: str, issuer: OidcIssuer, live_app: Any) -> None:
    with live_app(_settings(database_url, issuer, google_oidc_emails=())) as base:
        response = tick(base, headers=bearer(google_token(issuer)))
        assert response.status_code == 503  # no auth method configured at all
    assert issuer.jwks_fetches() == 0


def test_the_audience_is_required_with_the_emails() -> None:
    with pytest.raises(ConfigError, match="^CRONTICK_GOOGLE_OIDC_AUDIENCE: expected"):
        Settings.from_env({"CRONTICK_GOOGLE_OIDC_EMAILS": ACCOUNT})
    settings = Settings.from_env({"CRONTICK_GOOGLE_OIDC_EMAILS": f"{ACCOUNT}, b@x.iam.gserviceaccount.com",
                                  "CRONTICK_GOOGLE_OIDC_AUDIENCE": AUDIENCE})  # fmt: skip
    assert settings.google_oidc_emails == (ACCOUNT, "b@x.iam.gserviceaccount.com") and settings.auth_configured
