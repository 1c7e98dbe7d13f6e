"""Where the auth tests' credential makers used to live: they are tests/support/credentials.py's now, and the
issuer fixtures (`issuer`, `rsa_key`, `other_rsa_key`) tests/conftest.py's; kept for code that imports them here."""

from __future__ import annotations

from tests.support.credentials import (
    AUDIENCE,
    JWKS_PATH,
    QSTASH_CURRENT,
    QSTASH_NEXT,
    REPOSITORY,
    OidcIssuer,
    b64url,
    github_claims,
    hs256,
    qstash_signature,
    tick_token,
)

__all__ = [
    "AUDIENCE",
    "JWKS_PATH",
    "QSTASH_CURRENT",
    "QSTASH_NEXT",
    "REPOSITORY",
    "OidcIssuer",
    "b64url",
    "github_claims",
    "hs256",
    "qstash_signature",
    "tick_token",
]
