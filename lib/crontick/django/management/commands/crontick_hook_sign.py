"""`manage.py crontick_hook_sign`: `crontick hook-sign` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("hook-sign")
