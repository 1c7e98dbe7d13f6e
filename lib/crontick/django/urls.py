"""`path("ops/", include("crontick.django.urls"))`: where crontick lives in your URLconf, served by crontick.django.asgi.

Django's URLconf routes to views, not to an ASGI app, and Django would read a request's whole
body before any view ran, so crontick's routes are answered in front of Django by
`crontick.django.asgi.mount`, which finds its prefix here. These patterns name the routes
(`{% url "crontick:admin" %}`, `reverse("crontick:tick")`) and answer a request that reached
Django anyway (WSGI, `runserver`, an asgi.py without `mount`) with a 503 that says so.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from crontick import logs

app_name = "crontick"


# What mount() and the 503 below say when this URLconf is included inside i18n_patterns.
INSIDE_I18N = (
    "crontick's URL line, path('ops/', include('crontick.django.urls')), is inside i18n_patterns, which puts it under "
    "a language prefix (/en/ops/...); a scheduler calls one URL: put the line outside i18n_patterns "
    "(urlpatterns = [path('ops/', include('crontick.django.urls')), *i18n_patterns(...)])"
)


def inside_i18n_patterns() -> bool:
    """Whether ROOT_URLCONF includes these patterns under i18n_patterns' language prefix."""
    from django.urls import LocalePrefixPattern, URLResolver, get_resolver

    return any(
        isinstance(entry, URLResolver) and isinstance(entry.pattern, LocalePrefixPattern)
        and app_name in entry.namespace_dict
        for entry in get_resolver().url_patterns
    )  # fmt: skip


@csrf_exempt  # type: ignore[untyped-decorator]
def not_mounted(request: HttpRequest, **kwargs: Any) -> JsonResponse:
    logs.warning("not_mounted", path=request.path)
    if inside_i18n_patterns():
        return JsonResponse({"error": "inside_i18n_patterns", "detail": INSIDE_I18N}, status=503)
    return JsonResponse(
        {
            "error": "not_mounted",
            "detail": (
                f"{request.path} is crontick's, but this request reached Django's URLconf: serve the project through "
                "crontick.django.asgi.mount(get_asgi_application()) in asgi.py with an ASGI server (uvicorn, daphne, "
                "gunicorn with uvicorn workers); under WSGI or runserver, tick with manage.py crontick_tick"
            ),
        },
        status=503,
    )


urlpatterns = [
    path("", not_mounted, name="root"),
    path("api/cron/tick", not_mounted, name="tick"),
    path("api/health", not_mounted, name="health"),
    path("api/hooks/<str:name>", not_mounted, name="hook"),
    path("admin", not_mounted, name="admin"),
    re_path(r"^.+$", not_mounted),  # everything under the prefix is crontick's
]
