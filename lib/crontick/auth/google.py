"""Google's OIDC for the tick: Cloud Tasks (CRONTICK_WAKER=cloudtasks) and Cloud Scheduler call with a Google-signed
ID token for a service account; on only with CRONTICK_GOOGLE_OIDC_EMAILS (crontick.auth.tick tries it then)."""

from __future__ import annotations

import hashlib

from crontick.auth.tick import (
    CLOCK_LEEWAY_SECONDS,
    Credentials,
    _jwt_bearer,
    _jwt_reason,
    _published_key,
    _short,
    _use_jti,
)
from crontick.db import Database
from crontick.errors import Refused
from crontick.settings import Settings


async def check_google_oidc(creds: Credentials, settings: Settings, db: Database) -> None:
    """An RS256 ID token from Google's issuer, for our audience, whose verified `email` is an allowed service account.

    Google's ID tokens carry no jti: the token's own SHA-256 is recorded instead, so a replay is refused.
    Google writes its issuer with or without `https://`; both are Google's.
    """
    import jwt

    token = _jwt_bearer(creds)
    issuer = settings.google_oidc_issuer
    key = await _published_key(token, issuer, settings.google_oidc_jwks_url)
    issuers = [issuer, issuer.removeprefix("https://")]
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            audience=settings.google_oidc_audience,
            issuer=issuers,
            leeway=CLOCK_LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "iss", "aud", "email"]},
        )
    except jwt.PyJWTError as exc:
        raise Refused(_jwt_reason(exc)) from None
    email = str(claims["email"])
    if claims.get("email_verified") is not True:
        raise Refused(f"expected email_verified true, got: {_short(claims.get('email_verified'))}")
    if email.casefold() not in {e.casefold() for e in settings.google_oidc_emails}:
        raise Refused(
            f"expected an email in CRONTICK_GOOGLE_OIDC_EMAILS {list(settings.google_oidc_emails)}, got: {_short(email)}"
        )
    await _use_jti(db, "google:" + hashlib.sha256(token.encode()).hexdigest(), claims["exp"] + CLOCK_LEEWAY_SECONDS)
