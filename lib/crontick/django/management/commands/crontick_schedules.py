"""`manage.py crontick_schedules`: `crontick schedules` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("schedules")
