"""`manage.py crontick_migrate`: `crontick migrate` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("migrate")
