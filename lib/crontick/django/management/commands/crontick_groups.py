"""`manage.py crontick_groups`: `crontick groups` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("groups")
