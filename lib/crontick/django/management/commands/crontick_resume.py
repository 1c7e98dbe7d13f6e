"""`manage.py crontick_resume`: `crontick resume` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("resume")
