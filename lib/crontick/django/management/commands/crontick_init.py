"""`manage.py crontick_init`: `crontick init` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("init")
