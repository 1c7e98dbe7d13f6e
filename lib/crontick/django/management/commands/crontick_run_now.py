"""`manage.py crontick_run_now`: `crontick run-now` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("run-now")
