"""The README is a two-screen introduction whose links all lead into the docs site."""

from __future__ import annotations

import re

import yaml

from tests.support.constants import ROOT


def test_the_readme_fits_on_about_two_screens() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"expected at most 150 lines, got: {len(lines)} (move reference material to docs/)"
    text = "\n".join(lines)
    for must in ("make run", "make test", "crontick.enqueue(", "/api/cron/tick"):
        assert must in text


def test_every_readme_link_is_a_docs_page_in_the_nav_or_a_file() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def pages(entries: list[object]) -> set[str]:
        out: set[str] = set()
        for entry in entries:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            out |= pages(value) if isinstance(value, list) else {str(value)}
        return out

    listed = pages(nav)
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    assert links
    for link in links:
        if link.startswith("docs/") and link.endswith(".md"):
            # Pages other branches add are in the nav before they exist; mkdocs leaves them out until then.
            assert link.removeprefix("docs/") in listed, link
        else:
            assert (ROOT / link).exists(), link
