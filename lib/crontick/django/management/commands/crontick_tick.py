"""`manage.py crontick_tick`: `crontick tick` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("tick")
