"""crontick inside i18n_patterns, as the issue's app first had it: mounted at /en/ops."""

from django.conf.urls.i18n import i18n_patterns
from django.urls import include, path

from booking_site.urls import home

urlpatterns = i18n_patterns(path("", home), path("ops/", include("crontick.django.urls")))
