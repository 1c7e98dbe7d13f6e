"""The management commands of crontick.django: every `crontick` subcommand as `manage.py crontick_<name>`, run
with Django set up (so handler modules that import models load) and Django's database.

Each file in `commands/` is one line, `Command = command("<name>")`: the command's options are the CLI's own
(read from its argparse parser, so `manage.py help crontick_jobs` and `call_command` know them), and what was
given is handed back to `crontick <name>` as its argv, where the CLI parses and checks it as usual.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError

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


def cli_subcommands() -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """`crontick`'s subcommands: {name: (its parser, its one-line help)}."""
    from crontick.cli import main as cli

    for action in cli._parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    raise AssertionError("crontick's parser has no subcommands")


def command_name(cli_name: str) -> str:
    """`rate-limits` → `crontick_rate_limits`, the name manage.py knows it by."""
    return "crontick_" + cli_name.replace("-", "_")


def _as_given(action: argparse.Action) -> argparse.Action:
    """A copy of a CLI option that keeps the text as typed and is absent unless given: the CLI converts and defaults."""
    raw = copy.copy(action)
    if raw.type is not None and raw.choices is not None:
        raw.choices = [str(choice) for choice in raw.choices]
    raw.type = None
    raw.default = argparse.SUPPRESS
    if isinstance(raw, argparse._SubParsersAction):  # `schedules pause NAME`: its own parsers, as given too
        raw._name_parser_map = raw.choices = {name: _parser_as_given(sub) for name, sub in raw.choices.items()}
    return raw


def _parser_as_given(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    raw = argparse.ArgumentParser(prog=parser.prog, description=parser.description)
    for action in parser._actions:
        if not isinstance(action, argparse._HelpAction):
            raw._add_action(_as_given(action))
    return raw


def _argv(actions: list[argparse.Action], options: dict[str, Any]) -> Iterator[str]:
    """The given options back as command-line text: options first, then positionals in their declared order."""
    given = [a for a in actions if not isinstance(a, argparse._HelpAction) and a.dest in options]
    for action in (a for a in given if a.option_strings):
        flag, value = action.option_strings[-1], options[action.dest]
        if isinstance(action, argparse._StoreConstAction | argparse._CountAction):
            yield from [flag] * (value if isinstance(action, argparse._CountAction) else 1)
        elif isinstance(action, argparse._AppendAction):
            for item in value:
                yield from (flag, str(item))
        else:
            yield flag
            yield from (str(v) for v in value) if isinstance(value, list) else (str(value),)
    for action in (a for a in given if not a.option_strings):
        value = options[action.dest]
        if isinstance(action, argparse._SubParsersAction):
            yield value
            yield from _argv(action.choices[value]._actions, options)
        else:
            yield from (str(v) for v in value) if isinstance(value, list) else (str(value),)


def command(cli_name: str) -> type[BaseCommand]:
    """The management command that runs `crontick <cli_name>`."""
    parser, help_text = cli_subcommands()[cli_name]
    actions = [_as_given(a) for a in parser._actions if not isinstance(a, argparse._HelpAction)]

    class Command(BaseCommand):  # type: ignore[misc]  # Django ships no type information
        help = f"`crontick {cli_name}` with Django's settings and database: {help_text}."
        cli_actions = actions

        def add_arguments(self, parser: argparse.ArgumentParser) -> None:
            for action in self.cli_actions:
                parser._add_action(action)

        def handle(self, *args: Any, **options: Any) -> None:
            run([cli_name, *_argv(self.cli_actions, options)])

    Command.__module__ = f"crontick.django.management.commands.{command_name(cli_name)}"
    return Command
