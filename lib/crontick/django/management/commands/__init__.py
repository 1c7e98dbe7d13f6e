"""One module per `crontick` subcommand, each `Command = command(name)`: `manage.py crontick_jobs`, …"""
