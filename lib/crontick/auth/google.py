"""Google's OIDC for the tick: Cloud Tasks (CRONTICK_WAKER=cloudtasks) and Cloud Scheduler call with a Google-signed
ID token for a service account. On only with CRONTICK_GOOGLE_OIDC_EMAILS; crontick.auth.tick.check_google_oidc
calls this, then records the token so a replay is refused."""

from __future__ import annotations

from typing import Any

from crontick.auth import jwks
from crontick.errors import Refused
from crontick.settings import Settings


async def verified_claims(token: str, settings: Settings, leeway: float) -> dict[str, Any]:
    """The claims of an RS256 ID token from Google's issuer, for our audience, whose verified `email` is an allowed
    service account. Google writes its issuer with or without `https://`; both are Google's. Raises
    jwt.PyJWTError for a token that does not verify, Refused for claims that are not allowed."""
    import jwt

    issuer = settings.google_oidc_issuer
    key = await jwks.key_for(token, issuer, settings.google_oidc_jwks_url)
    claims: dict[str, Any] = jwt.decode(
        token,
        key,
        algorithms=["RS256"],
        audience=settings.google_oidc_audience,
        issuer=[issuer, issuer.removeprefix("https://")],
        leeway=leeway,
        options={"require": ["exp", "iat", "iss", "aud", "email"]},
    )
    if claims.get("email_verified") is not True:
        raise Refused(f"expected email_verified true, got: {str(claims.get('email_verified'))[:40]!r}")
    email = str(claims["email"])
    if email.casefold() not in {e.casefold() for e in settings.google_oidc_emails}:
        raise Refused(f"expected an email in CRONTICK_GOOGLE_OIDC_EMAILS {list(settings.google_oidc_emails)}, "
                      f"got: {email[:120]!r}")  # fmt: skip
    return claims
