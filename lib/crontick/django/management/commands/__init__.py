"""`manage.py crontick_migrate` and `manage.py crontick_tick`."""
