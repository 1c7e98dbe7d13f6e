"""The ASGI app: POST/GET /api/cron/tick, GET /api/health and the admin, built from a routes list.

It may be mounted under any prefix (`Mount("/ops", app=...)` or `--root-path /ops`): its routes
then answer under it only, and every URL it writes carries it (crontick.http.mount).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from crontick import admin, logs, vercel
from crontick.auth import tick as auth
from crontick.errors import ConfigError, CrontickError, DatabaseUnavailable, ReminderSourceError
from crontick.hooks.kick import attach as attach_kick
from crontick.http import body as http_body
from crontick.http import mount
from crontick.http.body import misconfigured, misconfigured_body
from crontick.runtime import Runtime
from crontick.settings import Settings
from crontick.tick import health as health_check

RETRY_AFTER_SECONDS = 30


async def inbound_hook(request: Request) -> Response:
    """POST /api/hooks/{name}, its module (the verifiers with it) loaded by the first hook request."""
    from crontick.hooks.endpoint import endpoint

    return await endpoint(request)


def error(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


async def tick(request: Request) -> JSONResponse:
    rt: Runtime = request.app.state.runtime
    if rt.problem or rt.db is None:
        return misconfigured()
    settings = rt.settings
    if not settings.auth_configured:
        return error(
            503,
            "auth_not_configured",
            "no way to authorise a tick is configured: set CRON_SECRET (32+ characters), "
            "QSTASH_CURRENT_SIGNING_KEY or CRONTICK_GITHUB_OIDC_REPOSITORY",
        )
    if http_body.declared_too_large(request, settings.max_body_bytes):
        return http_body.too_large(settings.max_body_bytes)
    body = b""
    body_read = bool(settings.qstash_current_signing_key) and "upstash-signature" in request.headers
    if body_read:
        try:  # only QStash signs the body; no other method makes the server read (or buffer) one
            body = await http_body.read_body_capped(request, settings.max_body_bytes)
        except http_body.BodyTooLarge:
            return http_body.too_large(settings.max_body_bytes)
    try:
        # Bounded as a whole: a pooler waiting for a server that is down would hold any statement
        # here (the jti record, the connect, the tick's own) for minutes.
        async with rt.bounded():
            # Inside the try: recording a short-lived token's jti needs the database, and an
            # outage there is a 503 the scheduler retries, not a 401 that looks like a bad secret.
            decision = await auth.authorize(request, body, settings, rt.db)
            if not decision.ok:
                logs.warning("tick_refused", reason=decision.reason, client=_client(request))
                return error(
                    401, "unauthorized", "a valid credential is required to run a tick", {"WWW-Authenticate": "Bearer"}
                )
            if settings.refuses_ticks:
                logs.warning("tick_refused", reason="preview deployment", client=_client(request))
                return error(
                    409,
                    "preview_deployment",
                    "this is a Vercel preview deployment (VERCEL_ENV=preview): it runs no ticks, since a preview that "
                    "shares production's database would run production's jobs with preview code; set "
                    "CRONTICK_ALLOW_PREVIEW=1 if this preview has a database of its own",
                )
            delivered = await _delivered(request, None if not body_read else body, settings)
            result = await rt.tick(
                source=decision.method or "http", execution_id=vercel.execution_id(request.headers), delivered=delivered
            )
    except DatabaseUnavailable as exc:
        logs.error("database_unavailable", detail=str(exc))
        return error(
            503,
            "database_unavailable",
            "the database cannot be reached; the scheduler should retry later",
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    except ConfigError as exc:  # found only on connecting, e.g. a DATABASE_URL psycopg cannot parse
        logs.error("misconfigured", detail=str(exc))
        return misconfigured()
    except ReminderSourceError as exc:  # the user's table lacks a column or cannot be read: theirs to fix
        logs.error("reminder_source", detail=str(exc))
        return error(503, "reminder_source", str(exc))
    except CrontickError as exc:
        logs.error("tick_error", detail=str(exc))
        return error(500, "tick_failed", str(exc))
    return JSONResponse(result.to_json())


async def _delivered(request: Request, body: bytes | None, settings: Settings) -> datetime | None:
    """The instant of the wake-up this authorised call delivers (crontick.wakers.delivery), or None. `body`: None
    when not read yet (a stream is read once: a signed call's empty body must not be read again). A body is read
    here (capped) only when it is JSON, so a scheduler's call without one reads nothing more."""
    if body is None and "json" in request.headers.get("content-type", ""):
        try:
            body = await http_body.read_body_capped(request, settings.max_body_bytes)
        except http_body.BodyTooLarge:
            return None  # an ordinary tick: the body only ever names an instant
    if not body:
        return None
    from crontick.wakers.delivery import delivered_instant

    return delivered_instant(body)


async def health(request: Request) -> JSONResponse:
    rt: Runtime = request.app.state.runtime
    if rt.problem or rt.db is None:
        return JSONResponse({"ok": False, "last_tick_at": None, **misconfigured_body()}, 503)
    try:
        async with rt.bounded() as db:
            status = await health_check.read(await db.connection(), rt.settings)
    except DatabaseUnavailable as exc:
        logs.error("database_unavailable", detail=str(exc))
        return JSONResponse(
            {
                "ok": False,
                "last_tick_at": None,
                "error": "database_unavailable",
                "detail": "the database cannot be reached",
            },
            503,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    except Exception as exc:  # psycopg errors mid-query: report unhealthy, never a traceback  # noqa: BLE001
        await rt.db.discard()
        logs.error("health_error", detail=f"{type(exc).__name__}: {exc}")
        return JSONResponse(
            {"ok": False, "last_tick_at": None, "error": "database_error", "detail": type(exc).__name__}, 503
        )
    # strict=1: an uptime monitor pages on the 503 while the scheduler is silent.
    stale_status = 503 if status.stale and health_check.strict(request.query_params.get("strict")) else 200
    return JSONResponse(status.to_json(), stale_status)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    codes = {404: "not_found", 405: "method_not_allowed"}
    headers = dict(exc.headers or {})
    detail = str(exc.detail)
    if exc.status_code == 405:
        detail = f"{request.method} is not allowed on {request.url.path}; use {headers.get('Allow', 'GET, POST')}"
    elif exc.status_code == 404:
        endpoints = [mount.url(request, path) for path in ("/api/cron/tick", "/api/health", "/api/hooks/{name}")]
        detail = f"nothing at {request.url.path}; the endpoints are {endpoints[0]}, {endpoints[1]} and {endpoints[2]}"
    return error(exc.status_code, codes.get(exc.status_code, "http_error"), detail, headers)


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    import traceback

    logs.error(
        "internal_error",
        path=request.url.path,
        error=type(exc).__name__,
        traceback="".join(traceback.format_exception(exc)),
    )
    return error(500, "internal_error", "the request failed; the server log has the details")


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


def create_app(settings: Settings | None = None) -> Starlette:
    logs.setup()  # to the host's logging when it has some, else one JSON line per event on stderr
    runtime = Runtime(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if runtime.db is not None:
            await runtime.db.close()

    app = Starlette(
        routes=[
            _without_head(Route("/api/cron/tick", tick, methods=["GET", "POST"])),
            Route("/api/health", health, methods=["GET"]),
            Route("/api/hooks/{name}", inbound_hook, methods=["POST"]),
            *admin.routes(runtime),
        ],
        middleware=[Middleware(mount.PrefixRoot)],
        exception_handlers={HTTPException: http_error, Exception: internal_error},
        lifespan=lifespan,
    )
    # Starlette answers `/api/health/` with a redirect to `http://<the request's Host>/api/health`: a link
    # to any host the client names. crontick's paths have one spelling each, and the mount's root is
    # served both ways by PrefixRoot, so nothing is redirected and the rest is a 404.
    app.router.redirect_slashes = False
    app.state.runtime = runtime
    attach_kick(runtime)
    return app


def _without_head(route: Route) -> Route:
    """Starlette adds HEAD to every GET route; a HEAD must not run a tick, so it gets 405."""
    assert route.methods is not None
    route.methods.discard("HEAD")
    return route


class _LazyApp:
    """`crontick.app.app`: the app is built on first use, so importing this module reads no env."""

    _app: Starlette | None = None

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        if self._app is None:
            self._app = create_app()
        await self._app(scope, receive, send)


app = _LazyApp()
