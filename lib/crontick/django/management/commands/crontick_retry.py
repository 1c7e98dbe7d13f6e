"""`manage.py crontick_retry`: `crontick retry` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("retry")
