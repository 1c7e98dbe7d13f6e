"""`manage.py crontick_cancel`: `crontick cancel` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("cancel")
