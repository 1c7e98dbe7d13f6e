"""`manage.py crontick_jobs`: `crontick jobs` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("jobs")
