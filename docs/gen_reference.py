"""Reference tables generated from the code (env variables, CLI, benchmark results), so the docs cannot drift.

docs/hooks.py replaces `<!-- generated: NAME -->` in a page with GENERATORS[NAME](); the tests in
tests/docs call the same functions. Descriptions of variables live in docs/variables.toml; which
variables exist, and their defaults, come from the code.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "lib" / "crontick"
VARIABLES_TOML = ROOT / "docs" / "variables.toml"
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
# Calls that read the environment: os.environ.get("X"), os.getenv("X"), env.get("X"), _text(env, "X"), …
_ENV_OBJECTS = {"environ", "env"}


class ReferenceError(Exception):
    """The docs and the code disagree (a variable read but not described, or described but not read)."""


@dataclass(frozen=True)
class EnvRead:
    name: str
    module: str  # e.g. crontick.settings
    field: str | None  # the Settings field it fills, when it is read in Settings.from_env


def _is_env_object(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _ENV_OBJECTS
    return isinstance(node, ast.Attribute) and node.attr in _ENV_OBJECTS


def _env_name(call: ast.Call) -> str | None:
    """The variable a call reads, if it is an environment read with a literal name."""
    func = call.func
    reads = (
        (isinstance(func, ast.Attribute) and func.attr in {"get", "pop", "setdefault"} and _is_env_object(func.value))
        or (isinstance(func, ast.Attribute) and func.attr == "getenv")
        or any(_is_env_object(a) for a in call.args)
    )
    if not reads:
        return None
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and ENV_NAME.match(arg.value):
            return arg.value
    return None


def _settings_fields(package: Path) -> dict[str, str]:
    """{variable: Settings field} from `Settings.from_env`'s `cls(field=<expression reading VARIABLE>, ...)`."""
    tree = ast.parse((package / "settings.py").read_text(encoding="utf-8"))
    mapping: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "from_env":
            # budget = _number(env, "CRONTICK_TIME_BUDGET_SECONDS", ...), later cls(time_budget_seconds=budget)
            local: dict[str, str] = {}
            for assign in ast.walk(node):
                if isinstance(assign, ast.Assign) and isinstance(assign.value, ast.Call):
                    if (name := _env_name(assign.value)) and isinstance(assign.targets[0], ast.Name):
                        local[assign.targets[0].id] = name
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "cls":
                    for kw in call.keywords:
                        if kw.arg and isinstance(kw.value, ast.Name) and kw.value.id in local:
                            mapping.setdefault(local[kw.value.id], kw.arg)
                        for inner in ast.walk(kw.value):
                            if kw.arg and isinstance(inner, ast.Call) and (name := _env_name(inner)):
                                mapping.setdefault(name, kw.arg)
    return mapping


def env_reads(package: Path = LIB) -> list[EnvRead]:
    """Every environment variable the package reads, found in its source (not by importing it)."""
    settings_fields = _settings_fields(package)
    found: dict[str, EnvRead] = {}
    # settings.py first: a variable that Settings reads is documented as a setting, wherever else it is read.
    paths = sorted(package.rglob("*.py"), key=lambda p: (p.name != "settings.py", str(p)))
    for path in paths:
        module = "crontick." + ".".join(path.relative_to(package).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Call):
                name = _env_name(node)
            elif isinstance(node, ast.Subscript) and _is_env_object(node.value):
                key = node.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and ENV_NAME.match(key.value):
                    name = key.value
            if name:
                found.setdefault(name, EnvRead(name, module, settings_fields.get(name)))
    return sorted(found.values(), key=lambda r: r.name)


def described() -> dict[str, dict[str, Any]]:
    return tomllib.loads(VARIABLES_TOML.read_text(encoding="utf-8"))


def _code_default(field_name: str | None) -> str | None:
    if field_name is None:
        return None
    from crontick.settings import Settings

    for f in fields(Settings):
        if f.name == field_name:
            value = (
                f.default
                if f.default is not MISSING
                else f.default_factory()
                if f.default_factory is not MISSING
                else None
            )
            if value is None or value == ():
                return None
            if isinstance(value, tuple):
                value = ",".join(value)
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            return f"`{value}`"
    raise ReferenceError(f"expected a Settings field named {field_name!r}, got none")


def _where_else_read(name: str) -> bool:
    """A development-only variable (tests, bench, CI) must still be read somewhere."""
    for folder in ("tests", "bench", ".ci", ".github"):
        for path in (ROOT / folder).rglob("*"):
            if (
                path.is_file()
                and path.suffix in {".py", ".yml", ".yaml", ""}
                and name in path.read_text(errors="ignore")
            ):
                return True
    return False


def configuration_table() -> str:
    """Markdown: one table per group, every variable crontick reads, with its default from the code."""
    reads = {r.name: r for r in env_reads()}
    docs = described()
    missing = sorted(set(reads) - set(docs))
    if missing:
        raise ReferenceError(
            f"expected a description in docs/variables.toml for every variable lib/ reads, got none for: {', '.join(missing)}"
        )
    stale = sorted(
        n for n, d in docs.items() if n not in reads and not (d.get("scope") == "development" and _where_else_read(n))
    )
    if stale:
        raise ReferenceError(
            f"expected docs/variables.toml to describe only variables the code reads, got: {', '.join(stale)}"
        )
    groups: dict[str, list[str]] = {}
    for name, d in docs.items():
        groups.setdefault(d.get("group", "Other"), []).append(name)
    out: list[str] = []
    for group, names in groups.items():
        out += [f"## {group}", "", "| variable | default | meaning |", "|---|---|---|"]
        for name in names:
            d = docs[name]
            read = reads.get(name)
            default = d.get("default") or _code_default(read.field if read else None) or "—"
            text = " ".join(d["text"].split()).replace("|", "\\|")
            where = f" <small>(`{read.module}`)</small>" if read else ""
            out.append(f"| `{name}`{where} | {default} | {text} |")
        out.append("")
    return "\n".join(out)


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, sub, helps.get(name, "")


def cli_reference() -> str:
    """Markdown: `crontick --help` and each subcommand's --help, as argparse prints them."""
    saved = {k: os.environ.pop(k) for k in ("HOST", "PORT") if k in os.environ}  # defaults read from the env
    try:
        from crontick import cli

        parser = cli._parser()
        os.environ["COLUMNS"] = "100"
        out = ["## `crontick`", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, sub, help_text in _subcommands(parser):
            out += [
                f"## `crontick {name}`",
                "",
                help_text[:1].upper() + help_text[1:] + ".",
                "",
                "```text",
                sub.format_help().rstrip(),
                "```",
                "",
            ]
        return "\n".join(out)
    finally:
        os.environ.update(saved)


def bench_results() -> str:
    """The committed benchmark run (bench/results/latest.json), rendered as `make bench` prints it."""
    sys.path.insert(0, str(ROOT))
    try:
        from bench import report
    finally:
        sys.path.pop(0)
    results = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())
    return "```text\n" + report.render(results).rstrip() + "\n```\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "configuration": configuration_table,
    "cli": cli_reference,
    "bench": bench_results,
}
