"""The docs site's reference tables come from the code: every variable lib/ reads, every CLI command."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from crontick.cli import main
from tests.support.constants import ROOT

LIB = ROOT / "lib" / "crontick"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def names_in_source() -> set[str]:
    """A second, cruder reading than the generator's: every quoted CRONTICK_* name in lib/, plus the providers' names."""
    text = "\n".join(p.read_text() for p in LIB.rglob("*.py"))
    names = set(re.findall(r"[\"'](CRONTICK_[A-Z0-9_]+)[\"']", text))
    for name in (
        "DATABASE_URL",
        "CRON_SECRET",
        "QSTASH_CURRENT_SIGNING_KEY",
        "QSTASH_NEXT_SIGNING_KEY",
        "RESEND_API_KEY",
        "TWILIO_ACCOUNT_SID",
        "TWILIO_AUTH_TOKEN",
    ):
        if f'"{name}"' in text:
            names.add(name)
    return names


def test_every_variable_read_in_lib_is_in_the_configuration_page() -> None:
    page = gen.configuration_table()
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)`", page, re.MULTILINE))
    found = names_in_source()
    assert {"CRONTICK_BATCH_SIZE", "DATABASE_URL", "CRON_SECRET"} <= found
    assert found - documented == set()
    assert {r.name for r in gen.env_reads()} - documented == set()


def test_defaults_come_from_the_settings_code() -> None:
    from crontick.settings import DEFAULT_BATCH_SIZE

    row = next(line for line in gen.configuration_table().splitlines() if line.startswith("| `CRONTICK_BATCH_SIZE`"))
    assert f"| `{DEFAULT_BATCH_SIZE}` |" in row


def test_a_variable_without_a_description_fails_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "crontick"
    package.mkdir()
    (package / "settings.py").write_text('import os\nX = os.environ.get("CRONTICK_NOT_DESCRIBED")\n')
    real = gen.env_reads
    monkeypatch.setattr(gen, "env_reads", lambda: real(package) + real())
    with pytest.raises(gen.ReferenceError, match="CRONTICK_NOT_DESCRIBED"):
        gen.configuration_table()


def test_every_row_of_the_settings_table_is_on_the_page_with_its_field_type_and_default() -> None:
    from crontick.settings import table

    page = gen.configuration_table()
    lines = {line.split(" ", 2)[1]: line for line in page.splitlines() if line.startswith("| `")}
    for field, _, row in table():
        line = lines[f"`{row.name}`"]
        assert f"(`Settings.{field}`)" in line if field else f"(`{row.read_by}`)" in line
        assert " ".join(row.doc.split()) in line.replace("\\|", "|")
        if row.secret:
            assert "| secret" in line
    assert "| integer, 1 to 10000 | `100` |" in lines["`CRONTICK_BATCH_SIZE`"]
    assert "| number, 0.1 to 900 | `8` |" in lines["`CRONTICK_TIME_BUDGET_SECONDS`"]
    assert "| secret, 32+ characters | — |" in lines["`CRON_SECRET`"]
    assert "| `1` or `0` | `1` |" in lines["`CRONTICK_WEBHOOK_DENY_PRIVATE`"]


def test_every_crontick_variable_lib_reads_is_a_row_of_the_settings_table() -> None:
    from crontick.settings import table

    rows = {row.name for _, _, row in table()}
    read = {r.name for r in gen.env_reads() if r.name.startswith("CRONTICK_")} | {
        n for n in names_in_source() if n.startswith("CRONTICK_")
    }
    assert {"CRONTICK_BATCH_SIZE", "CRONTICK_HANDLERS", "CRONTICK_KICK"} <= read
    assert read - rows == set()
    assert set(gen.described()) & rows == set(), "docs/variables.toml holds only what lib/ never reads"


def test_a_row_read_nowhere_or_a_toml_entry_lib_reads_fails_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    from crontick import settings
    from crontick.settings import Variable

    ghost = Variable("CRONTICK_GHOST", "Core", "Read by nobody.", read_by="crontick.cli.main")
    real = settings.table()
    monkeypatch.setattr(settings, "table", lambda: (*real, (None, "", ghost)))
    with pytest.raises(gen.ReferenceError, match="CRONTICK_GHOST"):
        gen.configuration_table()
    monkeypatch.setattr(settings, "table", lambda: real)
    described = gen.described()
    monkeypatch.setattr(gen, "described", lambda: {**described, "CRONTICK_BATCH_SIZE": {"text": "twice"}})
    with pytest.raises(gen.ReferenceError, match="CRONTICK_BATCH_SIZE"):
        gen.configuration_table()


def test_the_cli_page_has_every_subcommand_and_option() -> None:
    page = gen.cli_reference()
    parser = main._parser()
    for name, sub, _ in gen._subcommands(parser):
        assert f"## `crontick {name}`" in page
        for action in sub._actions:
            for option in action.option_strings:
                assert option in page, (name, option)


def test_the_nav_names_only_markdown_pages_and_the_existing_ones_build() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def pages(entries: list[object]) -> list[str]:
        out: list[str] = []
        for entry in entries:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            out += pages(value) if isinstance(value, list) else [str(value)]
        return out

    listed = pages(config["nav"])
    assert all(p.endswith(".md") for p in listed)
    written = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert written - set(listed) == set(), "every page is in the nav"
    for required in ("index.md", "configuration.md", "cli.md", "api.md", "deploy/vercel.md", "upgrading.md"):
        assert required in written


def test_the_benchmarks_page_renders_the_committed_results() -> None:
    page = gen.bench_results()
    assert page.startswith("```text") and "crontick ÷ it" in page and "enqueue" in page


def test_the_nav_hook_leaves_out_pages_not_written_yet() -> None:
    spec = importlib.util.spec_from_file_location("crontick_docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    nav = [
        {"Home": "index.md"},
        {"Later": "not-written-yet.md"},
        {"Guide": [{"Jobs": "jobs.md"}, {"Admin": "also-not-yet.md"}]},
        {"Empty": [{"Gone": "none-of-these.md"}]},
    ]
    assert hooks._present(nav, ROOT / "docs") == [{"Home": "index.md"}, {"Guide": [{"Jobs": "jobs.md"}]}]


def test_the_generated_blocks_in_the_repository_pages_are_current() -> None:
    """GitHub shows docs/*.md as committed: the tables live in the files, not only in the built site."""
    stale = gen.stale_pages()
    assert stale == {}, f"stale: {sorted(p.name for p in stale)}; run `make reference`"
    for page, name in (("configuration.md", "configuration"), ("cli.md", "cli")):
        text = (ROOT / "docs" / page).read_text()
        block = text.split(f"<!-- generated: {name} -->", 1)[1].split(f"<!-- end generated: {name} -->", 1)[0]
        assert len(block.splitlines()) > 50, f"{page}: the generated block is (nearly) empty"


def test_a_stale_block_is_found_and_rewritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "cli.md"
    page.write_text("# CLI\n\n<!-- generated: cli -->\nold text\n<!-- end generated: cli -->\n\nafter\n")
    (stale,) = gen.stale_pages(tmp_path)
    assert stale == page
    current = gen.fill(page.read_text(), "cli.md")
    assert "old text" not in current and "## `crontick migrate`" in current and current.endswith("\n\nafter\n")
    assert gen.fill(current, "cli.md") == current


@pytest.mark.parametrize(
    "text",
    ["<!-- generated: cli -->\n", "<!-- generated: cli -->\n<!-- end generated: configuration -->\n"],
    ids=["unclosed", "closed by another name"],
)
def test_a_block_not_closed_by_its_own_name_is_refused(text: str) -> None:
    with pytest.raises(gen.ReferenceError, match="closed by `<!-- end generated: NAME -->`"):
        gen.fill(text, "page.md")


def test_the_write_command_leaves_current_pages_alone(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "gen_reference.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""
