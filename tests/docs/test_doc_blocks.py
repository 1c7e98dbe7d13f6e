"""Every code block of the docs and the README that can run offline runs, as a reader would run it (issue 38,
finding 7: a stale import and stale sample output went unnoticed).

- **Python blocks** run in order, one process per page, sharing one namespace (a later block uses what an
  earlier one imported), against a fresh migrated database that also has the docs' `users` table. A block
  whose first line names a file (`# myapp/jobs.py`) is also written to that path in the page's project
  directory, which is on `sys.path` and the commands' cwd. Fragments take the few names a webhook or a
  script around them would give them (FRAGMENT_NAMES). SKIPPED lists what cannot run here, with the reason.
- **Shell blocks** (`sh`, and the `$ ` lines of `console`): every `crontick` command but `serve` and `dev`
  runs there with DATABASE_URL set to the test's database (a placeholder URL in the block is ignored) and
  must end with status 0 or a `crontick…: error:` line, never a traceback. A `console` block's sample output of a
  command that reads no database (`crontick schedules --from … --until …`) must equal what it prints.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.support.constants import ROOT, TEST_SECRET

PAGES = sorted([*ROOT.joinpath("docs").rglob("*.md"), ROOT / "README.md"])
BLOCK = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
FILE_HEADER = re.compile(r"^# ([\w/]+\.py)\b")
HANDLERS = re.compile(r"CRONTICK_HANDLERS=([\w.]+)")
# What a fragment takes from the code around it: a webhook's message, the app's connection and URL.
FRAGMENT_NAMES = """
import json, os, psycopg
DATABASE_URL = url = os.environ["DATABASE_URL"]
conn = psycopg.connect(DATABASE_URL, autocommit=True)
body, sender, conversation_id = "hi", "whatsapp:+31600000000", "42"
"""
FRAGMENT_USE = re.compile(r"\b(conn|body|sender|conversation_id|url|DATABASE_URL)\b")
# (page, block index): why it cannot run here. A test below fails when an entry names no such block.
SKIPPED: dict[tuple[str, int], str] = {
    ("docs/django.md", 7): "a Django app's module (relative imports): tests/django runs examples/django_project",
    ("docs/django.md", 10): "a Django project's urls.py: tests/django runs examples/django_project",
    ("docs/django.md", 11): "a Django project's asgi.py: tests/django runs examples/django_project",
    ("docs/django.md", 13): "a Django project's urls.py: tests/django runs examples/django_project",
    ("docs/jobs.md", 3): "psycopg2 and SQLAlchemy fragments: tests/http enqueues through each driver",
    ("docs/steps.md", 1): "the app's own table, elided (`insert into survey_answers ...`)",
    ("docs/steps.md", 3): "calls Stripe and a remote API",
}
RUNNER = r"""
import asyncio, ast, json, sys, traceback
blocks = json.loads(sys.stdin.read())
namespace = {"__name__": "__main__"}
for index, source, prelude in blocks:
    try:
        if prelude:
            exec(prelude, namespace)
        code = compile(source, f"block {index}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
        print(json.dumps([index, None]), flush=True)
    except BaseException as exc:
        print(json.dumps([index, "".join(traceback.format_exception(exc))[-1500:]]), flush=True)
"""


@dataclass(frozen=True)
class Block:
    page: str
    index: int
    lang: str
    text: str


def blocks(lang: str) -> list[Block]:
    found = []
    for page in PAGES:
        for index, (kind, text) in enumerate(BLOCK.findall(page.read_text(encoding="utf-8"))):
            if kind == lang and "--8<--" not in text:  # a snippet include: that file is tested where it lives
                found.append(Block(page.relative_to(ROOT).as_posix(), index, kind, text))
    return found


def python_pages() -> dict[str, list[Block]]:
    pages: dict[str, list[Block]] = {}
    for block in blocks("python"):
        pages.setdefault(block.page, []).append(block)
    return pages


@pytest.fixture
def project(database_url: str, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("create table users (id bigserial primary key, email text)")  # the docs' app table
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONTICK_") and k != "DATABASE_URL"}
    env.update(
        DATABASE_URL=database_url,
        CRON_SECRET=TEST_SECRET,
        TWILIO_AUTH_TOKEN="twilio-" + "t" * 32,
        CRONTICK_KICK="off",
        COLUMNS="80",  # argparse wraps its usage to the terminal: a reader's 80 columns
        PYTHONPATH=os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")]),
    )
    return tmp_path, env


def write_files(page_blocks: list[Block], directory: Path) -> list[str]:
    """The blocks that name a file, written there; the handler modules they name."""
    modules = []
    for block in page_blocks:
        if (header := FILE_HEADER.match(block.text)) is not None:
            path = directory / header.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            for parent in path.relative_to(directory).parents:
                (directory / parent / "__init__.py").touch()
            path.write_text(block.text)
            modules += HANDLERS.findall(block.text.splitlines()[0])
    return modules


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(python_pages()))
def test_the_python_blocks_of_a_page_run_in_order(page: str, project: tuple[Path, dict[str, str]]) -> None:
    directory, env = project
    page_blocks = python_pages()[page]
    write_files(page_blocks, directory)
    runnable = [b for b in page_blocks if (b.page, b.index) not in SKIPPED]
    for block in page_blocks:
        compile(block.text, f"{page} block {block.index}", "exec", flags=0x2000)  # even a skipped one parses
    # before each block that uses them: an earlier block may have closed its own `conn`
    given = [[b.index, b.text, FRAGMENT_NAMES if FRAGMENT_USE.search(b.text) else ""] for b in runnable]
    done = subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(given), capture_output=True, text=True, env=env,
        cwd=directory, timeout=120,
    )  # fmt: skip
    results = dict(json.loads(line) for line in done.stdout.splitlines())
    failed = {index: error for index, error in results.items() if error is not None}
    assert failed == {}, "\n".join(f"{page} block {i}:\n{e}" for i, e in failed.items())
    assert sorted(results) == [b.index for b in runnable], done.stderr


SNIPPET = re.compile(r'^--8<-- "([\w./-]+)"$')


def test_a_block_that_includes_a_file_names_one_that_exists() -> None:
    """`--8<-- "path"` includes a file when the site is built; a mangled marker (`--8 < --"path"`) shows as text."""
    included = 0
    for page in PAGES:
        for _, text in BLOCK.findall(page.read_text(encoding="utf-8")):
            for line in (line for line in text.splitlines() if re.match(r"^-+\s*8\s*<", line)):
                match = SNIPPET.match(line)
                assert match is not None, f'{page.name}: expected --8<-- "path", got: {line!r}'
                assert (ROOT / match.group(1)).is_file(), f"{page.name}: {line}"
                included += 1
    assert included >= 3


def test_every_skipped_block_still_exists_and_is_python() -> None:
    present = {(b.page, b.index) for b in blocks("python")}
    assert set(SKIPPED) - present == set()


def shell_commands(block: Block) -> list[tuple[str, str | None]]:
    """The block's `crontick` commands (continuation lines joined) and, in a console block, the output shown."""
    text = block.text.replace("\\\n", " ")
    commands: list[tuple[str, str | None]] = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if block.lang == "console":
            if not line.startswith("$ "):
                continue
            shown = []
            for later in lines[n + 1 :]:
                if later.startswith("$ "):
                    break
                shown.append(later)
            command, output = line[2:], "\n".join(shown).strip()
        else:
            command, output = line, None
        words = shlex.split(command, comments=True)
        while words and "=" in words[0] and not words[0].startswith("-"):  # DATABASE_URL='…' crontick migrate
            words = words[1:]
        if words and words[0] in ("crontick", ".venv/bin/crontick") and words[1:2] not in (["serve"], ["dev"]):
            commands.append((shlex.join(words[1:]), output))
    return commands


def shell_blocks() -> list[Block]:
    return [b for lang in ("sh", "console") for b in blocks(lang) if shell_commands(b)]


@pytest.mark.slow
@pytest.mark.parametrize("block", shell_blocks(), ids=lambda b: f"{b.page}#{b.index}")
def test_the_crontick_commands_of_a_shell_block_run(block: Block, project: tuple[Path, dict[str, str]]) -> None:
    directory, env = project
    page_blocks = python_pages().get(block.page, [])
    modules = write_files(page_blocks, directory)
    if modules:
        env = {**env, "CRONTICK_HANDLERS": ",".join(modules)}
    for command, shown in shell_commands(block):
        done = subprocess.run(
            [sys.executable, "-m", "crontick.cli", *shlex.split(command)], capture_output=True, text=True, env=env,
            cwd=directory, timeout=120,
        )  # fmt: skip
        said = (done.stdout + done.stderr).strip()
        assert "Traceback" not in said, f"crontick {command}:\n{said}"
        if done.returncode != 0:  # refused: the last line says why (argparse prints its usage above it)
            assert re.match(r"crontick[\w -]*: error: ", done.stderr.strip().splitlines()[-1]), (
                f"crontick {command}:\n{said}"
            )
        if shown is not None and "schedules" in command and "--from" in command:  # no database: exact output
            assert said == shown, f"crontick {command}"


def test_shell_blocks_are_found() -> None:
    found = {f"{b.page}#{b.index}" for b in shell_blocks()}
    assert {"docs/cli.md#0", "docs/recurring-jobs.md#4", "docs/flow-control.md#1"} <= found
