"""Credential makers built from the providers' specs, not from crontick's code: a GitHub-like OIDC
issuer (own RSA key, JWKS over real HTTP), QStash signatures and tick tokens made by hand, and the
webhook signatures of GitHub, Stripe and Twilio."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from typing import TYPE_CHECKING, Any

import jwt

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import rsa
    from pytest_httpserver import HTTPServer

# Shaped like Upstash's signing keys (sig_ + 28 characters).
# The JSON admin API's two bearer secrets (tests/admin, and the kicks its actions start in tests/hooks).
API_ADMIN_SECRET = "api-admin-secret-" + "A" * 32
API_VIEWER_SECRET = "api-viewer-secret-" + "V" * 32
ADMIN = {"Authorization": f"Bearer {API_ADMIN_SECRET}"}
VIEWER = {"Authorization": f"Bearer {API_VIEWER_SECRET}"}
QSTASH_CURRENT = "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r"
QSTASH_NEXT = "sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs"
REPOSITORY = "octo-org/octo-repo"
AUDIENCE = "https://app.example.com"
JWKS_PATH = "/.well-known/jwks"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256(claims: dict[str, Any], key: str, **header_fields: str) -> str:
    """A compact JWS made by hand (RFC 7515), independent of PyJWT, which crontick verifies with."""
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT", **header_fields}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    signature = hmac.new(key.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


def qstash_signature(key: str, url: str, raw_body: bytes, /, *, pad: bool = True, **overrides: Any) -> str:
    """What QStash puts in Upstash-Signature: iss Upstash, sub = URL, body = base64url(SHA-256(raw body))."""
    now = int(time.time())
    digest = base64.urlsafe_b64encode(hashlib.sha256(raw_body).digest()).decode()
    claims: dict[str, Any] = {
        "iss": "Upstash",
        "sub": url,
        "exp": now + 300,
        "nbf": now,
        "iat": now,
        "jti": f"jwt_{uuid.uuid4().hex}",
        "body": digest if pad else digest.rstrip("="),
    }
    claims.update(overrides)
    return hs256({k: v for k, v in claims.items() if v is not None}, key)


def tick_token(secret: str, audience: str, **overrides: Any) -> str:
    """A short-lived tick token as the spec in the README describes it (HS256, aud, iat, exp, jti)."""
    now = int(time.time())
    claims: dict[str, Any] = {"aud": audience, "iat": now, "exp": now + 60, "jti": uuid.uuid4().hex}
    claims.update(overrides)
    return hs256({k: v for k, v in claims.items() if v is not None}, secret)


def github_claims(issuer: str, **overrides: Any) -> dict[str, Any]:
    """The claim set of a GitHub Actions OIDC token, shaped as GitHub documents it."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "jti": str(uuid.uuid4()),
        "sub": f"repo:{REPOSITORY}:ref:refs/heads/main",
        "aud": AUDIENCE,
        "ref": "refs/heads/main",
        "sha": "d6cd1e2bd19e03a81132a23b2025920577f84e37",
        "repository": REPOSITORY,
        "repository_owner": "octo-org",
        "repository_owner_id": "65",
        "repository_id": "74",
        "repository_visibility": "private",
        "actor_id": "12",
        "actor": "octocat",
        "run_id": "7145567542",
        "run_number": "10",
        "run_attempt": "1",
        "runner_environment": "github-hosted",
        "workflow": "crontick tick (OIDC)",
        "workflow_ref": f"{REPOSITORY}/.github/workflows/tick-oidc.yml@refs/heads/main",
        "workflow_sha": "d6cd1e2bd19e03a81132a23b2025920577f84e37",
        "job_workflow_ref": f"{REPOSITORY}/.github/workflows/tick-oidc.yml@refs/heads/main",
        "job_workflow_sha": "d6cd1e2bd19e03a81132a23b2025920577f84e37",
        "head_ref": "",
        "base_ref": "",
        "event_name": "schedule",
        "ref_type": "branch",
        "ref_protected": "true",
        "iss": issuer,
        "nbf": now - 5,
        "iat": now - 5,
        "exp": now + 295,
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


class OidcIssuer:
    """A token issuer at a local URL: its JWKS is served over HTTP, and every fetch is logged."""

    def __init__(self, server: HTTPServer, key: rsa.RSAPrivateKey, kid: str = "crontick-test-key") -> None:
        self.server = server
        self.key = key
        self.kid = kid
        self.url = server.url_for("").rstrip("/")
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
        jwk.update({"kid": kid, "use": "sig", "alg": "RS256"})
        server.expect_request(JWKS_PATH, method="GET").respond_with_json({"keys": [jwk]})

    def token(self, *, key: rsa.RSAPrivateKey | None = None, kid: str | None = None, **overrides: Any) -> str:
        headers = {"kid": kid or self.kid, "x5t": "eBZ_cn3sXYAd0ch4THBKHIgOwOE"}
        return jwt.encode(github_claims(self.url, **overrides), key or self.key, algorithm="RS256", headers=headers)

    def jwks_fetches(self) -> int:
        return sum(1 for request, _ in self.server.log if request.path == JWKS_PATH)


def github_signature(secret: str, body: bytes) -> str:
    """X-Hub-Signature-256 as GitHub documents it: sha256= and the hex HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def stripe_signature(secret: str, body: bytes, at: int) -> str:
    """Stripe-Signature as Stripe documents it: t=<unix time>,v1=<hex HMAC-SHA256 of "t." + raw body>."""
    sig = hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={sig}"


def twilio_signature(token: str, url: str, form: dict[str, str]) -> str:
    """X-Twilio-Signature, computed by Twilio's own library for the URL it posts to."""
    from twilio.request_validator import RequestValidator

    return str(RequestValidator(token).compute_signature(url, form))
