"""Django, with crontick's routes in front of it where urls.py includes crontick.django.urls."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "booking_site.settings")
django_app = get_asgi_application()

from crontick.django.asgi import mount  # noqa: E402

application = mount(django_app)
