"""`manage.py crontick_enqueue`: `crontick enqueue` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("enqueue")
