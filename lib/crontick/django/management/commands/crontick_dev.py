"""`manage.py crontick_dev`: `crontick dev` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("dev")
