"""Admin sessions: a signed, expiring cookie (signed-out ones listed in the database), CSRF checks, roles and headers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import NamedTuple, TypeVar
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from crontick.http import mount
from crontick.settings import Settings

SESSION_SECONDS = 8 * 3600
FAILED_LOGIN_DELAY_SECONDS = 0.75
ROLES = ("admin", "viewer")
SECURE_COOKIE = "__Host-crontick_admin"
# Under a mount prefix over https: `__Host-` demands Path=/, which would send the admin's cookie
# with every request to the host app, so the cookie keeps to the admin's paths and the `__Secure-`
# prefix (Secure required) instead; docs/admin.md says what that gives up.
MOUNTED_COOKIE = "__Secure-crontick_admin"
# Browsers refuse `Secure` and the `__Host-` prefix over plain http, so `make run` on loopback
# uses this, followed by the port: browsers do not keep cookies apart by port, so the name (and
# the /admin path) is what keeps this server's session apart from another local server's.
LOOPBACK_COOKIE = "crontick_admin"
FLASH_COOKIE = "crontick_admin_flash"
ADMIN_PATH = "/admin"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

# An actor's name is cut to this many characters (admin_audit_actor_capped, migration 0029).
ACTOR_MAX_CHARS = 200


class Actor(NamedTuple):
    """An authorize() hook's answer that names the person: their role, and the name the audit log records."""

    role: str
    name: str


R = TypeVar("R", bound=Response)
HookAnswer = str | Actor | tuple[str, str] | None
Authorizer = Callable[[Request], "HookAnswer | Awaitable[HookAnswer]"]
_hook: list[Authorizer] = []


def authorize(func: Authorizer) -> Authorizer:
    """Register `func(request)` (sync or async) for apps with their own login.

    It answers `Actor("admin" | "viewer", name)` (or a plain `(role, name)` pair) to open the admin
    for that person, whose name every audit row of the request then records; a bare role opens it
    with no name recorded; None falls back to the login form. CRONTICK_ADMIN_SECRET must still be
    set: it keys the CSRF tokens, and the admin stays closed without it.
    """
    _hook[:] = [func]
    return func


def _hook_answer(answer: object) -> tuple[str, str | None] | None:
    """(role, actor) from a hook's answer; None when it opens nothing (None, or a role that is not one)."""
    role, name = answer if isinstance(answer, tuple) and len(answer) == 2 else (answer, None)
    if role not in ROLES:
        return None
    actor = str(name)[:ACTOR_MAX_CHARS] if name is not None and str(name) else None
    return str(role), actor


@dataclass(frozen=True)
class Session:
    """Who is signed in. `id` is the cookie's session id (None for the authorize() hook), which
    sign-out records; `new_binding` is a CSRF binding cookie the response must set (hook only);
    `actor` is the person's name when the hook gave one (the audit log records it)."""

    role: str
    csrf: str
    via_hook: bool = False
    id: str | None = None
    new_binding: str | None = None
    actor: str | None = None

    @property
    def can_act(self) -> bool:
        return self.role == "admin"


def role_secrets(settings: Settings) -> dict[str, str]:
    """The secret of each configured role; one equal to CRON_SECRET opens nothing (Settings.admin_roles)."""
    return settings.admin_roles


def admin_open(settings: Settings) -> bool:
    return "admin" in role_secrets(settings)


def _key(secret: str) -> bytes:
    # Derived from the role's secret: rotating that secret invalidates every cookie and token it signed.
    return hmac.new(secret.encode(), b"crontick-admin-session-v1", hashlib.sha256).digest()


def _mac(key: bytes, text: str) -> str:
    digest = hmac.new(key, text.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _same(expected: str, given: str) -> bool:
    # Bytes: compare_digest refuses str with a non-ASCII character, and a cookie can hold one.
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))


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
    found = verified(settings, value, now)
    return None if found is None else found[0]


def verified(settings: Settings, value: str, now: float) -> tuple[str, str, int] | None:
    """(role, session id, expiry) of a valid, unexpired cookie value, else None. Sign-out is
    checked by the caller, in the database (crontick.admin.sign_in.store)."""
    parts = value.split(".")
    if len(parts) != 5 or parts[0] != "v1" or parts[1] not in ROLES or not _epoch(parts[2]):
        return None
    secret = role_secrets(settings).get(parts[1])
    if secret is None or int(parts[2]) < now:
        return None
    if not _same(_mac(_key(secret), ".".join(parts[:4])), parts[4]):
        return None
    return parts[1], parts[3], int(parts[2])


def _epoch(text: str) -> bool:
    # ASCII digits and short, before int(): '²' is a digit to isdigit(), and int() refuses 4,301 digits.
    return 0 < len(text) <= 12 and text.isascii() and text.isdigit()


def csrf_token(settings: Settings, role: str, cookie: str) -> str:
    """The form token of one session: a MAC of its cookie, so it dies with the session."""
    return _mac(_key(role_secrets(settings)[role]), "csrf." + cookie)


def is_loopback_http(request: Request) -> bool:
    return request.url.scheme == "http" and request.url.netloc.rsplit(":", 1)[0] in LOOPBACK_HOSTS


def admin_path(request: Request) -> str:
    """The admin's path as the browser sees it: `/admin`, or `/ops/admin` when crontick is mounted at /ops."""
    return mount.url(request, ADMIN_PATH)


def cookie_name(request: Request) -> str:
    """`__Host-crontick_admin` over https (`__Secure-crontick_admin` under a mount prefix);
    on loopback http, `crontick_admin_<port>`."""
    if is_loopback_http(request):
        return f"{LOOPBACK_COOKIE}_{request.url.port or 80}"
    return MOUNTED_COOKIE if mount.prefix(request) else SECURE_COOKIE


def cookie_paths(request: Request) -> tuple[str, ...]:
    """Where the session cookie is sent: `/` over https at the root (the `__Host-` prefix requires it).

    On loopback http, and under a mount prefix, only the admin's own paths: `/admin` (which covers
    `/admin/…`) and, as a second cookie of the same name and value, `/admin.json`, which `/admin`
    does not cover; both under the prefix (`/ops/admin`). So another server on this machine, or
    the host app's own pages, see the cookie only on requests under those paths.
    """
    if is_loopback_http(request) or mount.prefix(request):
        path = admin_path(request)
        return (path, path + ".json")
    return ("/",)


def flash_cookie_name(request: Request) -> str:
    return f"{LOOPBACK_COOKIE}_{request.url.port or 80}_flash" if is_loopback_http(request) else FLASH_COOKIE


def binding_cookie_name(request: Request) -> str:
    """The cookie that gives each browser of an authorize() hook session its own CSRF token."""
    return cookie_name(request) + "_csrf"


async def current(request: Request, settings: Settings) -> Session | None:
    """The request's session: from the authorize() hook if one is registered and answers, else the cookie."""
    if not admin_open(settings):
        return None
    now = time.time()
    if _hook:
        answer = _hook[0](request)
        given = _hook_answer(await answer if isinstance(answer, Awaitable) else answer)
        if given is not None:
            bindings = cookie_values(request, binding_cookie_name(request))
            return replace(_hook_session(settings, given[0], bindings, now), actor=given[1])
    for cookie in cookie_values(request, cookie_name(request)):
        found = verified(settings, cookie, now)
        if found is not None:
            role, session_id, _ = found
            return Session(role, csrf_token(settings, role, cookie), id=session_id)
    return None


def cookie_values(request: Request, name: str) -> list[str]:
    """Every value the browser sent for cookie `name`, most specific path first.

    A browser sends one cookie per (name, path): a stale one on `/` beside a fresh one on
    `/admin` is sent too, after it, and request.cookies keeps only the last value of a name.
    """
    values = []
    for item in request.headers.get("cookie", "").split(";"):
        key, sep, value = item.partition("=")
        if sep and key.strip() == name:
            values.append(value.strip())
    return values[:4]


def _hook_session(settings: Settings, role: str, bindings: list[str], now: float) -> Session:
    """A hook session's CSRF token, bound to a random per-browser cookie that expires like a session:
    one token shared by every hook user forever would let a token seen once forge forms for ever."""
    key = _key(role_secrets(settings)["admin"])
    binding = next((value for value in bindings if _binding_ok(key, value, now)), None)
    fresh = None
    if binding is None:
        body = f"b1.{int(now) + SESSION_SECONDS}.{secrets.token_urlsafe(12)}"
        binding = fresh = f"{body}.{_mac(key, body)}"
    return Session(role, _mac(key, f"csrf.hook.{role}.{binding}"), True, new_binding=fresh)


def _binding_ok(key: bytes, value: str, now: float) -> bool:
    parts = value.split(".")
    return (
        len(parts) == 4
        and parts[0] == "b1"
        and _epoch(parts[1])
        and int(parts[1]) >= now
        and _same(_mac(key, ".".join(parts[:3])), parts[3])
    )


def set_session(response: Response, request: Request, value: str) -> None:
    secure = not is_loopback_http(request)
    for path in cookie_paths(request):
        response.set_cookie(
            cookie_name(request),
            value,
            max_age=SESSION_SECONDS,
            path=path,
            secure=secure,
            httponly=True,
            samesite="strict",
        )


def set_binding(response: Response, request: Request, value: str) -> None:
    """The hook session's CSRF binding; only forms need it, and every form is under the first path."""
    secure = not is_loopback_http(request)
    path = cookie_paths(request)[0]
    response.set_cookie(
        binding_cookie_name(request),
        value,
        max_age=SESSION_SECONDS,
        path=path,
        secure=secure,
        httponly=True,
        samesite="strict",
    )


def clear_session(response: Response, request: Request) -> None:
    secure = not is_loopback_http(request)
    for path in cookie_paths(request):
        response.delete_cookie(cookie_name(request), path=path, secure=secure, httponly=True, samesite="strict")


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
    return bool(given) and _same(session.csrf, given)


def sign(settings: Settings, session: Session, text: str) -> str:
    """A MAC of `text` bound to this session (bulk-retry continuation links, flash messages)."""
    return _mac(_key(role_secrets(settings)["admin"]), f"{session.csrf}.{text}")


def sign_ok(settings: Settings, session: Session, text: str, mac: str) -> bool:
    return bool(mac) and _same(sign(settings, session, text), mac)


def set_flash(response: Response, request: Request, settings: Settings, session: Session, message: str) -> None:
    value = base64.urlsafe_b64encode(message.encode()).decode().rstrip("=")
    response.set_cookie(
        flash_cookie_name(request),
        f"{value}.{sign(settings, session, 'flash.' + value)}",
        max_age=120,
        path=admin_path(request),
        secure=not is_loopback_http(request),
        httponly=True,
        samesite="strict",
    )


def take_flash(request: Request, settings: Settings, session: Session) -> str | None:
    raw = request.cookies.get(flash_cookie_name(request), "")
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
