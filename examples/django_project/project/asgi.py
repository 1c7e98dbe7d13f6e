"""The project's ASGI app: Django, with crontick's routes in front of it under /ops.

Serve it with `uvicorn project.asgi:application` (or gunicorn with uvicorn workers, daphne, …).
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_app = get_asgi_application()  # django.setup() first, so handler modules may import models

from crontick.django.asgi import mount  # noqa: E402

application = mount(django_app)  # the prefix is where urls.py includes crontick.django.urls
