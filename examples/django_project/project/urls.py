"""The project's URLs: its own view, and crontick under /ops (served by crontick.django.asgi.mount in asgi.py)."""

from django.urls import include, path
from signups import views

urlpatterns = [
    path("signup", views.signup),
    path("ops/", include("crontick.django.urls")),  # /ops/api/cron/tick, /ops/api/health, /ops/api/hooks/…, /ops/admin
]
