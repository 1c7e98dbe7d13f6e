"""`manage.py crontick_pause`: `crontick pause` with Django set up and its database (crontick.django.management)."""

from crontick.django.management import command

Command = command("pause")
