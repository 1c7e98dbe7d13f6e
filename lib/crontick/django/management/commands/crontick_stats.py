"""`manage.py crontick_stats`: `crontick stats` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("stats")
