"""Reference tables generated from the code (env variables, CLI, benchmark results), so the docs cannot drift.

A page holds each table between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`, written
into the file by `python docs/gen_reference.py --write` (`make reference`), so GitHub shows it too;
`--check` (and tests/docs/test_reference_pages.py) fails when a page is stale, and docs/hooks.py
fills the same blocks again when the site is built. The configuration page is crontick.settings' table of
variables (every variable lib/ reads, with its type, bounds, default and doc line); only the
variables that just the tests, benchmarks or CI read are described in docs/variables.toml.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "lib" / "crontick"
VARIABLES_TOML = ROOT / "docs" / "variables.toml"
DEVELOPMENT = "Development only"
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
# Calls that read the environment: os.environ.get("X"), os.getenv("X"), env.get("X"), text(env, "X"), …
_ENV_OBJECTS = {"environ", "env"}


class ReferenceError(Exception):
    """The docs and the code disagree (a variable read but not described, or described but not read)."""


@dataclass(frozen=True)
class EnvRead:
    name: str
    module: str  # e.g. crontick.cli.main


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


def _module(package: Path, path: Path) -> str:
    parts = path.relative_to(package).with_suffix("").parts
    return ".".join(("crontick", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def env_reads(package: Path = LIB) -> list[EnvRead]:
    """Every environment variable the package reads by a literal name, found in its source (not by importing it).

    Settings.from_env reads its rows by their names in the table, so those reads are the table itself.
    """
    found: dict[str, EnvRead] = {}
    for path in sorted(package.rglob("*.py")):
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
                found.setdefault(name, EnvRead(name, _module(package, path)))
    return sorted(found.values(), key=lambda r: r.name)


def described() -> dict[str, dict[str, Any]]:
    """docs/variables.toml: the variables only the tests, benchmarks or CI read (lib/ never does)."""
    return tomllib.loads(VARIABLES_TOML.read_text(encoding="utf-8"))


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


def _read_by_its_module(row: Any) -> bool:
    """A row that fills no Settings field is read by the module it names (a pattern: by its literal prefix)."""
    relative = Path(*row.read_by.split(".")[1:])
    path = next((p for p in (LIB / relative.with_suffix(".py"), LIB / relative / "__init__.py") if p.is_file()), None)
    return path is not None and row.name.split("<")[0] in path.read_text(encoding="utf-8")


def _type(kind: str, row: Any) -> str:
    """What a value of the row looks like, with its bounds: `integer, 1 to 10000`, `secret, 32+ characters`."""
    if row.secret:
        return "secret" + (f", {_plain(row.minimum)}+ characters" if row.minimum else "")
    what = {"int": "integer", "float": "number", "bool": "`1` or `0`", "tuple[str, ...]": "comma-separated list"}
    text = what.get(kind, "text")
    if row.minimum is not None and row.maximum is not None:
        return f"{text}, {_plain(row.minimum)} to {_plain(row.maximum)}"
    if row.minimum is not None:
        return f"{text}, at least {_plain(row.minimum)}"
    return text


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def _default(row: Any) -> str:
    if row.shown:
        return str(row.shown)
    value = row.default
    if value is None or value == ():
        return "—"
    if isinstance(value, bool):
        return "`1`" if value else "`0`"
    if isinstance(value, tuple):
        value = ",".join(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def configuration_table() -> str:
    """Markdown: one table per group, every variable crontick reads, from crontick.settings' table."""
    from crontick import settings

    table = settings.table()
    rows = {row.name: row for _, _, row in table}
    docs = described()
    reads = {r.name: r for r in env_reads()}
    missing = sorted(set(reads) - set(rows) - set(docs))
    if missing:
        raise ReferenceError(
            "expected a row in crontick.settings' table for every variable lib/ reads, got none for: "
            + ", ".join(missing)
        )
    stale = sorted(
        [
            row.name
            for field, _, row in table
            if field is None and row.name not in reads and not _read_by_its_module(row)
        ]
        + [n for n in docs if n in rows or n in reads or not _where_else_read(n)]
    )
    if stale:
        raise ReferenceError(
            "expected the table and docs/variables.toml (development only) to describe only variables that are read "
            f"where they say, once, got: {', '.join(stale)}"
        )
    if unheaded := sorted(row.name for _, _, row in table if row.group not in settings.variables.GROUPS):
        raise ReferenceError(f"expected each row's group among {settings.variables.GROUPS}, got none for: {unheaded}")
    header = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    out: list[str] = []
    for group in settings.variables.GROUPS:
        out += [f"## {group}", "", *header]
        for field, kind, row in table:
            if row.group == group:
                where = f"Settings.{field}" if field else row.read_by  # the field code sets, else who reads it
                name = f"`{row.name}` <small>(`{where}`)</small>"
                out.append(f"| {name} | {_cell(_type(kind, row))} | {_cell(_default(row))} | {_cell(row.doc)} |")
        out.append("")
    out += [f"## {DEVELOPMENT}", "", *header]
    for name, d in docs.items():
        out.append(f"| `{name}` | text | {_cell(d.get('default', '—'))} | {_cell(d['text'])} |")
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
        from crontick.cli import main as cli

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
        from bench import summary
    finally:
        sys.path.pop(0)
    results = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())
    return "```text\n" + summary.render(results).rstrip() + "\n```\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "configuration": configuration_table,
    "cli": cli_reference,
    "bench": bench_results,
}
BLOCK = re.compile(
    r"<!-- generated: (?P<name>\w+) -->\n(?:(?P<body>.*?)\n)?<!-- end generated: (?P=name) -->", re.DOTALL
)
OPENING = re.compile(r"<!--\s*generated:\s*(\w+)\s*-->")


def fill(markdown: str, where: str) -> str:
    """The page with every generated block holding its generator's current output."""
    opened = OPENING.findall(markdown)
    blocks = BLOCK.findall(markdown)
    if len(opened) != len(blocks):
        raise ReferenceError(
            f"{where}: expected each `<!-- generated: NAME -->` closed by `<!-- end generated: NAME -->`, "
            f"got {len(opened)} opened and {len(blocks)} closed"
        )

    def generate(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in GENERATORS:
            raise ReferenceError(f"{where}: expected a generator among {sorted(GENERATORS)}, got: {name!r}")
        body = GENERATORS[name]().strip("\n")
        return f"<!-- generated: {name} -->\n{body}\n<!-- end generated: {name} -->"

    return BLOCK.sub(generate, markdown)


def stale_pages(docs_dir: Path = ROOT / "docs") -> dict[Path, tuple[str, str]]:
    """Every page whose generated blocks differ from the code's: {path: (as written, as it should be)}."""
    stale = {}
    for page in sorted(docs_dir.glob("*.md")):
        text = page.read_text()
        if OPENING.search(text) and (current := fill(text, page.name)) != text:
            stale[page] = (text, current)
    return stale


def main(argv: list[str] | None = None) -> int:
    import difflib

    parser = argparse.ArgumentParser(description="Write or check the generated tables in docs/*.md.")
    modes = parser.add_mutually_exclusive_group(required=True)
    modes.add_argument("--write", dest="mode", action="store_const", const="--write", help="rewrite stale pages")
    modes.add_argument("--check", dest="mode", action="store_const", const="--check", help="exit 1 if one is stale")
    mode = parser.parse_args(argv).mode
    sys.path.insert(0, str(ROOT))  # bench/ and tests/support, as when run from the root with -m
    stale = stale_pages()
    for page, (written, current) in stale.items():
        if mode == "--write":
            page.write_text(current)
            print(f"wrote {page.relative_to(ROOT)}")
        else:
            sys.stdout.writelines(
                difflib.unified_diff(
                    written.splitlines(keepends=True), current.splitlines(keepends=True), str(page), "generated"
                )
            )
    if mode == "--check" and stale:
        print(f"{len(stale)} page(s) stale: run `python docs/gen_reference.py --write`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
