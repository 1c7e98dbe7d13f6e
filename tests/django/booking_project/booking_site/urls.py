"""crontick outside i18n_patterns (docs/django.md): its routes have no language prefix."""

from django.conf.urls.i18n import i18n_patterns
from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse("salon")


urlpatterns = [
    path("ops/", include("crontick.django.urls")),
    *i18n_patterns(path("", home)),
]
