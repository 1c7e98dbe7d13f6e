"""tests/django/booking_project's URLconf (crontick.django.urls): crontick inside i18n_patterns is refused plainly, and
outside it mounts without a language prefix."""

from __future__ import annotations

from tests.django.projects import Site

PROBE = """
import os
from django.test import Client
response = Client().post(os.environ["PROBE_PATH"], HTTP_HOST="127.0.0.1")
print(response.status_code, response.json()["error"])
try:
    import booking_site.asgi
    from crontick.django.asgi import urlconf_prefix
    print("mounted at", urlconf_prefix())
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_crontick_inside_i18n_patterns_is_refused_plainly_and_outside_it_mounts_without_a_language(
    site: Site,
) -> None:
    inside = site.django(
        "shell", "-c", PROBE, BOOKING_URLCONF="booking_site.urls_inside", PROBE_PATH="/fr/ops/api/cron/tick"
    )
    assert inside.returncode == 0, inside.stderr
    lines = inside.stdout.splitlines()[-2:]  # after Django 5.2's line on the shell's automatic imports
    assert lines[0] == "503 inside_i18n_patterns"
    assert lines[1].startswith("ImproperlyConfigured crontick: crontick's URL line, path('ops/', include(")
    assert "is inside i18n_patterns" in lines[1] and "put the line outside i18n_patterns" in lines[1]
    outside = site.django("shell", "-c", PROBE, PROBE_PATH="/ops/api/cron/tick")
    assert outside.returncode == 0, outside.stderr
    assert outside.stdout.splitlines()[-2:] == ["503 not_mounted", "mounted at /ops"]  # Django itself is not mount()
