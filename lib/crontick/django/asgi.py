"""`application = mount(get_asgi_application())`: crontick's ASGI app under a prefix of your Django project, Django for the rest.

A request whose path is under the prefix (the one your URLconf gives `crontick.django.urls`,
or `prefix=`) goes to crontick's app, mounted as Starlette mounts it (`root_path` gains the
prefix, so its routes are `/ops/api/cron/tick`, `/ops/api/health`, `/ops/api/hooks/{name}`,
`/ops/admin`); every other request, and every other protocol, goes to Django untouched.
Django's middleware does not run for crontick's routes: crontick authorises them itself and
caps what it reads. The ASGI lifespan goes to crontick (Django does not speak it), which closes
its connections at shutdown.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from crontick.errors import ConfigError


def mount(django_app: ASGIApp | None = None, *, prefix: str | None = None) -> ASGIApp:
    """Django's ASGI app (default: `get_asgi_application()`) with crontick's routes under `prefix`.

    `prefix` defaults to where ROOT_URLCONF includes `crontick.django.urls`. crontick's settings
    are `crontick.django.conf.settings()`; a wrong one is ImproperlyConfigured here, at start-up.
    """
    from django.core.asgi import get_asgi_application
    from django.core.exceptions import ImproperlyConfigured

    from crontick.app import create_app
    from crontick.django import conf, jobs

    if django_app is None:
        django_app = get_asgi_application()
    where = checked_prefix(prefix) if prefix is not None else urlconf_prefix()
    try:
        settings = conf.settings()
    except ConfigError as exc:
        raise ImproperlyConfigured(f"crontick: {exc}") from None
    crontick_app = create_app(settings)  # its runtime serves crontick.kick() in this process too
    jobs.attached_by_app()
    return PrefixRouter(where, crontick_app, django_app)


class PrefixRouter:
    """Requests under `prefix` to `inner`, with `root_path` extended as a Starlette Mount does; the rest to `outer`."""

    def __init__(self, prefix: str, inner: ASGIApp, outer: ASGIApp) -> None:
        self.prefix, self.inner, self.outer = prefix, inner, outer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.inner(scope, receive, send)
        elif scope["type"] == "http" and self.owns(scope):
            root_path = scope.get("root_path", "")
            child = {
                **scope,
                "app_root_path": scope.get("app_root_path", root_path),
                "root_path": root_path + self.prefix,
            }
            await self.inner(child, receive, send)
        else:
            await self.outer(scope, receive, send)

    def owns(self, scope: Scope) -> bool:
        path: str = scope["path"]
        root_path: str = scope.get("root_path", "")
        if root_path and path.startswith(root_path):
            path = path[len(root_path) :]
        return path == self.prefix or path.startswith(self.prefix + "/")


def urlconf_prefix() -> str:
    """Where ROOT_URLCONF includes crontick.django.urls, as `/ops` (ImproperlyConfigured when it does not)."""
    from django.core.exceptions import ImproperlyConfigured
    from django.urls import NoReverseMatch, get_script_prefix, reverse

    from crontick.django.urls import INSIDE_I18N, inside_i18n_patterns

    if inside_i18n_patterns():
        raise ImproperlyConfigured(f"crontick: {INSIDE_I18N}")
    try:
        root = reverse("crontick:root")
    except NoReverseMatch:
        raise ImproperlyConfigured(
            "crontick: expected path('ops/', include('crontick.django.urls')) in ROOT_URLCONF, or "
            "mount(..., prefix='/ops'), got: no URL named crontick:root"
        ) from None
    script = get_script_prefix()  # FORCE_SCRIPT_NAME, if set: the server's root_path, not part of the prefix
    return checked_prefix("/" + root.removeprefix(script).lstrip("/"))


def checked_prefix(prefix: str) -> str:
    """`prefix` as `/ops` (one leading slash, none trailing); ImproperlyConfigured for the root."""
    from django.core.exceptions import ImproperlyConfigured

    clean = "/" + prefix.strip("/")
    if clean == "/" or any(c in clean for c in "?#"):
        raise ImproperlyConfigured(
            f"crontick: expected a path prefix such as /ops (crontick at the root would answer every path "
            f"of your project), got: {prefix!r}"
        )
    return clean
