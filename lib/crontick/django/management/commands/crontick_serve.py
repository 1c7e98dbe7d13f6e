"""`manage.py crontick_serve`: `crontick serve` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("serve")
