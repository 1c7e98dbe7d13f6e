"""The docs site's reference tables come from the code: every variable lib/ reads, every CLI command."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from crontick import cli
from tests.conftest import ROOT

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


def test_the_cli_page_has_every_subcommand_and_option() -> None:
    page = gen.cli_reference()
    parser = cli._parser()
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
