"""Who may trigger a tick: each configured method is tried; any one that accepts authorises."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import psycopg
from starlette.requests import Request

from crontick.db import Database, query
from crontick.errors import DatabaseUnavailable, Refused
from crontick.http import mount
from crontick.settings import Settings

# A short-lived token may live at most this long (exp - iat), so a leaked one is soon useless.
MAX_TOKEN_TTL_SECONDS = 300
DEFAULT_TOKEN_TTL_SECONDS = 60
# Clock skew tolerated on exp/nbf/iat between the signer (QStash, GitHub, the CLI) and us.
CLOCK_LEEWAY_SECONDS = 30
MAX_JTI_CHARS = 200
# A used jti's row is kept this long past the token's exp, by the database's clock: an app host whose
# clock is up to this far behind the database still has its tokens accepted, and never a replay.
JTI_KEEP_AFTER_EXPIRY = timedelta(minutes=15)
QSTASH_ISSUER = "Upstash"


# NamedTuples, not dataclasses: every cold start imports this module, and a dataclass costs a
# millisecond to create.
class Decision(NamedTuple):
    ok: bool
    method: str | None  # which method accepted, for the log
    reason: str  # why it was refused (for the log only, never for the response)


class Credentials(NamedTuple):
    """What the request presents, read once: the bearer value, QStash's header, the URL and raw body."""

    bearer: str | None
    upstash_signature: str | None
    base_url: str  # what the caller used before the path: https://app.example.com (or with a stage prefix)
    url: str  # the full URL called, as QStash signs it
    body: bytes


Check = Callable[[Credentials, Settings, Database], Awaitable[None]]


async def authorize(request: Request, body: bytes, settings: Settings, db: Database) -> Decision:
    """Try each configured method in turn. The caller answers a uniform 401 on refusal."""
    creds = credentials(request, body, settings)
    reasons: list[str] = []
    for name, check in _methods(settings):
        try:
            await check(creds, settings, db)
        except Refused as exc:
            reasons.append(f"{name}: {exc}")
            continue
        return Decision(True, name, "")
    return Decision(False, None, "; ".join(reasons) or "no credential")


def _methods(settings: Settings) -> list[tuple[str, Check]]:
    """The methods that are configured; each stays off until its setting is present."""
    methods: list[tuple[str, Check]] = []
    if settings.cron_secret:
        methods += [("bearer", check_secret), ("token", check_signed_token)]
    if settings.github_oidc_repository:
        methods.append(("github_oidc", check_github_oidc))
    if settings.qstash_current_signing_key:
        methods.append(("qstash", check_qstash))
    if settings.google_on:
        methods.append(("google_oidc", check_google_oidc))
    return methods


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def credentials(request: Request, body: bytes, settings: Settings) -> Credentials:
    """What the request carries, and the URL it was sent to: the base URL crontick is reached at, then
    the path inside crontick: CRONTICK_PUBLIC_URL (`public_base`), or without it the request's origin
    plus the mount prefix."""
    base = public_base(request, settings) or (
        _request_origin(request, trust_forwarded=settings.trust_forwarded) + mount.prefix(request)
    )
    query_string = request.url.query
    url = base + mount.route_path(request) + (f"?{query_string}" if query_string else "")
    return Credentials(
        bearer=bearer_token(request.headers.get("authorization")),
        upstash_signature=request.headers.get("upstash-signature"),
        base_url=base,
        url=url,
        body=body,
    )


def public_base(request: Request, settings: Settings) -> str | None:
    """CRONTICK_PUBLIC_URL as the base of this request's URL: as written when it has a path
    (`https://app.example.com/ops`, an API Gateway stage), else the origin plus the mount prefix.

    Either form names the same URL under `Mount("/ops")`, `--root-path /ops` or the Django mount,
    so a signature checks whichever the operator wrote. The prefix is the ASGI `root_path`, which the
    host app or the server sets, never a request header.
    """
    url = settings.public_url
    if url is None or urlsplit(url).path:
        return url
    return url + mount.prefix(request)


def _request_origin(request: Request, *, trust_forwarded: bool) -> str:
    """scheme://host as the caller saw it. x-forwarded-* count only with CRONTICK_TRUST_FORWARDED=1:
    any client can send them, and they would decide the URL a QStash signature must name."""
    headers = request.headers
    forwarded_scheme = _first(headers.get("x-forwarded-proto")) if trust_forwarded else None
    forwarded_host = _first(headers.get("x-forwarded-host")) if trust_forwarded else None
    scheme = forwarded_scheme or request.url.scheme
    host = forwarded_host or headers.get("host") or request.url.netloc
    return f"{scheme}://{host}"


def _require_trusted_url(settings: Settings) -> None:
    """Signed credentials name the URL they are for; without a trusted one, a client's headers would choose it."""
    if not (settings.public_url or settings.trust_forwarded):
        raise Refused(
            "off: a signed credential needs CRONTICK_PUBLIC_URL (or CRONTICK_TRUST_FORWARDED=1 behind your proxy)"
        )


def _first(value: str | None) -> str | None:
    """The first entry of a comma-separated forwarded header (the client-facing hop)."""
    if not value:
        return None
    return value.split(",")[0].strip() or None


# --- the shared secret --------------------------------------------------------------------------


async def check_secret(creds: Credentials, settings: Settings, db: Database) -> None:
    assert settings.cron_secret is not None
    if creds.bearer is None:
        raise Refused("no Authorization: Bearer header")
    if not hmac.compare_digest(creds.bearer.encode(), settings.cron_secret.encode()):
        raise Refused("secret does not match")


# --- short-lived HS256 tokens signed with CRON_SECRET --------------------------------------------


def mint_token(
    secret: str, audience: str, *, ttl_seconds: int = DEFAULT_TOKEN_TTL_SECONDS, now: float | None = None
) -> str:
    """An HS256 JWT for one tick: aud = the app's base URL, a fresh jti, exp at most 5 minutes out."""
    import jwt

    if not 1 <= ttl_seconds <= MAX_TOKEN_TTL_SECONDS:
        raise ValueError(f"expected a lifetime of 1 to {MAX_TOKEN_TTL_SECONDS} seconds, got: {ttl_seconds}")
    issued = int(time.time() if now is None else now)
    claims = {"aud": audience, "iat": issued, "exp": issued + ttl_seconds, "jti": secrets.token_urlsafe(16)}
    return jwt.encode(claims, secret, algorithm="HS256")


async def check_signed_token(creds: Credentials, settings: Settings, db: Database) -> None:
    import jwt

    assert settings.cron_secret is not None
    token = _jwt_bearer(creds)
    _require_trusted_url(settings)
    # CRONTICK_PUBLIC_URL as written counts too: `crontick token` names it, without the mount prefix.
    audiences = [creds.base_url, creds.url.split("?")[0], *([settings.public_url] if settings.public_url else [])]
    try:
        claims = jwt.decode(
            token,
            settings.cron_secret,
            algorithms=["HS256"],
            audience=audiences,
            leeway=CLOCK_LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "aud", "jti"]},
        )
    except jwt.PyJWTError as exc:
        raise Refused(_jwt_reason(exc)) from None
    exp, iat, jti = claims["exp"], claims["iat"], claims["jti"]
    # PyJWT refuses an iat in the future, so this also bounds exp to 5 minutes from now.
    if exp - iat > MAX_TOKEN_TTL_SECONDS:
        raise Refused(f"expected a lifetime (exp - iat) of at most {MAX_TOKEN_TTL_SECONDS} s, got: {exp - iat} s")
    if not isinstance(jti, str) or not 1 <= len(jti) <= MAX_JTI_CHARS:
        raise Refused(f"expected a jti string of 1 to {MAX_JTI_CHARS} characters")
    await _use_jti(db, jti, exp + CLOCK_LEEWAY_SECONDS)


def _namespaced_jti(issuer: str, claims: dict[str, Any]) -> str:
    """`qstash:<jti>`: each issuer picks its own jtis, so they share the table without colliding."""
    jti = claims.get("jti")
    limit = MAX_JTI_CHARS - len(issuer) - 1
    if not isinstance(jti, str) or not 1 <= len(jti) <= limit:
        raise Refused(f"expected a jti string of 1 to {limit} characters")
    return f"{issuer}:{jti}"


async def _use_jti(db: Database, jti: str, expires_at: float) -> None:
    """Record the jti; a second use of the same token finds it and is refused (fail closed on errors).

    Whether the row may be pruned, and whether the token is too old to record, is decided by the
    database's clock (sql/auth.sql), so hosts whose clocks differ cannot open a replay window.
    """
    params = {"jti": jti, "expires_at": datetime.fromtimestamp(expires_at, UTC), "keep_after": JTI_KEEP_AFTER_EXPIRY}
    try:
        conn = await db.connection()
        cur = await conn.execute(query("token_use_record"), params)
        row = await cur.fetchone()
    except psycopg.OperationalError as exc:
        # Not a refusal: the tick could not run anyway, and a 503 tells the scheduler to retry.
        await db.discard()
        raise DatabaseUnavailable(exc) from exc
    except psycopg.Error as exc:
        raise Refused(f"could not record the jti: {type(exc).__name__} (is `crontick migrate` applied?)") from None
    assert row is not None  # the statement always returns its one row
    recorded, live = row
    if not live:
        raise Refused("expected a token not long expired by the database's clock (is this host's clock behind?)")
    if not recorded:
        raise Refused("jti already used (replayed token)")


# --- Upstash QStash ------------------------------------------------------------------------------


async def check_qstash(creds: Credentials, settings: Settings, db: Database) -> None:
    """Verify Upstash-Signature with the current key, then the next key (Upstash rotates them)."""
    if not creds.upstash_signature:
        raise Refused("no Upstash-Signature header")
    _require_trusted_url(settings)
    keys = [k for k in (settings.qstash_current_signing_key, settings.qstash_next_signing_key) if k]
    failures = []
    for label, key in zip(("current key", "next key"), keys, strict=False):
        try:
            claims = _verify_qstash(creds, key)
        except Refused as exc:
            failures.append(f"{label}: {exc}")
            continue
        # Recorded only now, after the signature verified: forged jtis never reach the table.
        await _use_jti(db, _namespaced_jti("qstash", claims), claims["exp"] + CLOCK_LEEWAY_SECONDS)
        return
    raise Refused("; ".join(failures))


def _verify_qstash(creds: Credentials, key: str) -> dict[str, Any]:
    import jwt

    assert creds.upstash_signature is not None
    try:
        claims = jwt.decode(
            creds.upstash_signature,
            key,
            algorithms=["HS256"],
            issuer=QSTASH_ISSUER,
            leeway=CLOCK_LEEWAY_SECONDS,
            options={"require": ["iss", "sub", "exp", "nbf", "body", "jti"], "verify_aud": False},
        )
    except jwt.PyJWTError as exc:
        raise Refused(_jwt_reason(exc)) from None
    if claims["sub"] != creds.url:
        raise Refused(f"expected sub = the URL called {creds.url!r}, got: {_short(claims['sub'])}")
    expected = base64.urlsafe_b64encode(hashlib.sha256(creds.body).digest()).rstrip(b"=")
    signed = str(claims["body"]).rstrip("=").encode()
    if not hmac.compare_digest(signed, expected):
        raise Refused("expected body = base64url(SHA-256 of the raw request body), got a different hash")
    return claims


# --- GitHub Actions OIDC -------------------------------------------------------------------------


async def check_github_oidc(creds: Credentials, settings: Settings, db: Database) -> None:
    """An RS256 token from GitHub's issuer, for our audience, whose claims name an allowed repository."""
    import jwt

    from crontick.auth import jwks  # only for the OIDC methods, like jwt

    token = _jwt_bearer(creds)
    key = await jwks.key_for(token, settings.github_oidc_issuer)
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            audience=settings.github_oidc_audience,
            issuer=settings.github_oidc_issuer,
            leeway=CLOCK_LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "iss", "aud", "repository", "jti"]},
        )
    except jwt.PyJWTError as exc:
        raise Refused(_jwt_reason(exc)) from None
    check_github_claims(claims, settings)
    await _use_jti(db, _namespaced_jti("github", claims), claims["exp"] + CLOCK_LEEWAY_SECONDS)


def check_github_claims(claims: dict[str, Any], settings: Settings) -> None:
    """The repository, ref and workflow claims themselves; `sub` is never parsed (its format changes)."""
    assert settings.github_oidc_repository is not None
    repository = str(claims.get("repository", ""))
    # GitHub names are case-insensitive; the claim carries the canonical spelling.
    if repository.casefold() != settings.github_oidc_repository.casefold():
        raise Refused(f"expected repository {settings.github_oidc_repository!r}, got: {_short(repository)}")
    pinned_id = settings.github_oidc_repository_id
    if pinned_id and str(claims.get("repository_id", "")) != pinned_id:
        # A deleted and re-created repository keeps its name but gets a new id.
        raise Refused(
            f"expected repository_id {pinned_id!r} (CRONTICK_GITHUB_OIDC_REPOSITORY_ID), got: {_short(claims.get('repository_id'))}"
        )
    ref = claims.get("ref")
    if settings.github_oidc_refs and ref not in settings.github_oidc_refs:
        raise Refused(
            f"expected ref in CRONTICK_GITHUB_OIDC_REFS {list(settings.github_oidc_refs)}, got: {_short(ref)}"
        )
    if settings.github_oidc_workflows:
        # Only the file path in workflow_ref: the `workflow` claim is the YAML `name:`, which any
        # author of any workflow in the repository can set to an allowed value.
        path = _workflow_path(claims.get("workflow_ref"), repository)
        if path not in settings.github_oidc_workflows:
            raise Refused(
                f"expected a workflow_ref path in CRONTICK_GITHUB_OIDC_WORKFLOWS {list(settings.github_oidc_workflows)}, "
                f"got: {_short(claims.get('workflow_ref'))}"
            )


def _workflow_path(workflow_ref: object, repository: str) -> str | None:
    """`.github/workflows/tick.yml` out of the claim `owner/repo/.github/workflows/tick.yml@refs/heads/main`."""
    if not isinstance(workflow_ref, str) or not workflow_ref.casefold().startswith(repository.casefold() + "/"):
        return None
    return workflow_ref[len(repository) + 1 :].rpartition("@")[0] or None


# --- Google OIDC (Cloud Tasks, Cloud Scheduler) --------------------------------------------------


async def check_google_oidc(creds: Credentials, settings: Settings, db: Database) -> None:
    """A Google-signed ID token for an allowed service account (crontick.auth.google). Google's tokens carry no
    jti: the token's own SHA-256 is recorded instead, so a replay is refused."""
    import jwt

    from crontick.auth import google  # only when configured

    token = _jwt_bearer(creds)
    try:
        claims = await google.verified_claims(token, settings, CLOCK_LEEWAY_SECONDS)
    except jwt.PyJWTError as exc:
        raise Refused(_jwt_reason(exc)) from None
    await _use_jti(db, "google:" + hashlib.sha256(token.encode()).hexdigest(), claims["exp"] + CLOCK_LEEWAY_SECONDS)


# --- helpers -------------------------------------------------------------------------------------


def _jwt_bearer(creds: Credentials) -> str:
    """The bearer value when it has the shape of a JWT; the plain secret never reaches PyJWT."""
    if creds.bearer is None:
        raise Refused("no Authorization: Bearer header")
    if creds.bearer.count(".") != 2:
        raise Refused("bearer value is not a JWT")
    return creds.bearer


def _jwt_reason(exc: Exception) -> str:
    """PyJWT's own message ("Signature has expired", "Invalid audience"): it never quotes the token."""
    return f"{type(exc).__name__}: {exc}"


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
