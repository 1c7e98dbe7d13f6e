"""`manage.py crontick_token`: `crontick token` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("token")
