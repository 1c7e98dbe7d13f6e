"""Admin sessions without server state: a signed, expiring cookie, CSRF checks, roles and security headers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from ..settings import Settings

SESSION_SECONDS = 8 * 3600
FAILED_LOGIN_DELAY_SECONDS = 0.75
ROLES = ("admin", "viewer")
SECURE_COOKIE = "__Host-crontick_admin"
# Browsers refuse `Secure` and the `__Host-` prefix over plain http, so `make run` on loopback uses this.
LOOPBACK_COOKIE = "crontick_admin"
FLASH_COOKIE = "crontick_admin_flash"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

R = TypeVar("R", bound=Response)
Authorizer = Callable[[Request], "str | None | Awaitable[str | None]"]
_hook: list[Authorizer] = []


def authorize(func: Authorizer) -> Authorizer:
    """Register `func(request) -> "admin" | "viewer" | None` (sync or async) for apps with their own login.

    A role it returns opens the admin without the secret login; None falls back to the login form.
    CRONTICK_ADMIN_SECRET must still be set: it keys the CSRF tokens, and the admin stays closed without it.
    """
    _hook[:] = [func]
    return func


@dataclass(frozen=True)
class Session:
    role: str
    csrf: str
    via_hook: bool = False

    @property
    def can_act(self) -> bool:
        return self.role == "admin"


def role_secrets(settings: Settings) -> dict[str, str]:
    """The secret of each configured role. A secret equal to CRON_SECRET opens nothing (fail closed)."""
    found = {"admin": settings.admin_secret, "viewer": settings.admin_viewer_secret}
    cron = settings.cron_secret or ""
    return {
        role: value
        for role, value in found.items()
        if value and not (cron and hmac.compare_digest(value.encode(), cron.encode()))
    }


def admin_open(settings: Settings) -> bool:
    return "admin" in role_secrets(settings)


def _key(secret: str) -> bytes:
    # Derived from the role's secret: rotating that secret invalidates every cookie and token it signed.
    return hmac.new(secret.encode(), b"crontick-admin-session-v1", hashlib.sha256).digest()


def _mac(key: bytes, text: str) -> str:
    digest = hmac.new(key, text.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def match_secret(settings: Settings, given: str) -> str | None:
    """The role whose secret `given` is, comparing against every secret in constant time."""
    matched = None
    for role, value in role_secrets(settings).items():
        if hmac.compare_digest(given.encode(), value.encode()):
            matched = matched or role
    return matched


def issue(settings: Settings, role: str, now: float) -> str:
    """The cookie value for a new session of `role`: v1.<role>.<expires>.<nonce>.<mac>."""
    body = f"v1.{role}.{int(now) + SESSION_SECONDS}.{secrets.token_urlsafe(12)}"
    return f"{body}.{_mac(_key(role_secrets(settings)[role]), body)}"


def verify(settings: Settings, value: str, now: float) -> str | None:
    """The role of a valid, unexpired cookie value signed with its role's current secret, else None."""
    parts = value.split(".")
    if len(parts) != 5 or parts[0] != "v1" or parts[1] not in ROLES or not parts[2].isdigit():
        return None
    secret = role_secrets(settings).get(parts[1])
    if secret is None or int(parts[2]) < now:
        return None
    body = ".".join(parts[:4])
    if not hmac.compare_digest(_mac(_key(secret), body), parts[4]):
        return None
    return parts[1]


def csrf_token(settings: Settings, role: str, cookie: str) -> str:
    """The form token of one session: a MAC of its cookie, so it dies with the session."""
    return _mac(_key(role_secrets(settings)[role]), "csrf." + cookie)


def is_loopback_http(request: Request) -> bool:
    return request.url.scheme == "http" and request.url.netloc.rsplit(":", 1)[0] in LOOPBACK_HOSTS


def cookie_name(request: Request) -> str:
    return LOOPBACK_COOKIE if is_loopback_http(request) else SECURE_COOKIE


async def current(request: Request, settings: Settings) -> Session | None:
    """The request's session: from the authorize() hook if one is registered and answers, else the cookie."""
    if not admin_open(settings):
        return None
    if _hook:
        answer = _hook[0](request)
        role = await answer if isinstance(answer, Awaitable) else answer
        if role in ROLES:
            return Session(str(role), _mac(_key(role_secrets(settings)["admin"]), f"csrf.hook.{role}"), True)
    cookie = request.cookies.get(cookie_name(request), "")
    role = verify(settings, cookie, time.time()) if cookie else None
    if role is None:
        return None
    return Session(role, csrf_token(settings, role, cookie))


def set_session(response: Response, request: Request, value: str) -> None:
    secure = not is_loopback_http(request)
    response.set_cookie(
        cookie_name(request), value, max_age=SESSION_SECONDS, path="/", secure=secure, httponly=True, samesite="strict"
    )


def clear_session(response: Response, request: Request) -> None:
    secure = not is_loopback_http(request)
    response.delete_cookie(cookie_name(request), path="/", secure=secure, httponly=True, samesite="strict")


def same_origin(request: Request, settings: Settings) -> bool:
    """CSRF, first line: the browser says the POST came from this origin.

    `Sec-Fetch-Site` when the browser sends it (only `same-origin` passes); otherwise `Origin`
    must be this request's own origin or CRONTICK_PUBLIC_URL's. Neither header: refused.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site == "same-origin"
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return False
    allowed = {f"{request.url.scheme}://{request.url.netloc}"}
    if settings.public_url:
        parts = urlsplit(settings.public_url)
        allowed.add(f"{parts.scheme}://{parts.netloc}")
    return origin.rstrip("/") in allowed


def token_ok(session: Session, given: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), session.csrf.encode())


def sign(settings: Settings, session: Session, text: str) -> str:
    """A MAC of `text` bound to this session (bulk-retry continuation links, flash messages)."""
    return _mac(_key(role_secrets(settings)["admin"]), f"{session.csrf}.{text}")


def sign_ok(settings: Settings, session: Session, text: str, mac: str) -> bool:
    return bool(mac) and hmac.compare_digest(sign(settings, session, text).encode(), mac.encode())


def set_flash(response: Response, request: Request, settings: Settings, session: Session, message: str) -> None:
    value = base64.urlsafe_b64encode(message.encode()).decode().rstrip("=")
    response.set_cookie(
        FLASH_COOKIE,
        f"{value}.{sign(settings, session, 'flash.' + value)}",
        max_age=120,
        path="/admin",
        secure=not is_loopback_http(request),
        httponly=True,
        samesite="strict",
    )


def take_flash(request: Request, settings: Settings, session: Session) -> str | None:
    raw = request.cookies.get(FLASH_COOKIE, "")
    value, _, mac = raw.partition(".")
    if not value or not sign_ok(settings, session, "flash." + value, mac):
        return None
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
    except ValueError:
        return None


def secure_headers(response: R) -> R:
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response
