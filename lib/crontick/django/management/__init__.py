"""The management commands of crontick.django: the `crontick` command run with Django's database."""

from __future__ import annotations

from django.core.management.base import CommandError

from crontick.errors import ConfigError


def run(argv: list[str]) -> None:
    """`crontick <argv>` with crontick.django's settings; exits with its code when it fails (it printed the one-line reason)."""
    from crontick.cli.main import main
    from crontick.django import conf

    try:
        env = conf.environ()
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    code = main(argv, env)
    if code:
        raise SystemExit(code)
