"""`manage.py crontick_rate_limits`: `crontick rate-limits` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("rate-limits")
