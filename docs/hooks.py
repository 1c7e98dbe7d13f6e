"""mkdocs hooks: drop nav entries whose page is not written yet, and fill the generated blocks (docs/gen_reference.py)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_reference  # noqa: E402 (next to this file, not an installed module)

log = logging.getLogger("mkdocs.hooks.crontick")


def _present(entries: list[Any], docs_dir: Path) -> list[Any]:
    """The nav without pages that do not exist (yet): other branches add them; strict mode would fail."""
    kept: list[Any] = []
    for entry in entries:
        if isinstance(entry, dict):
            ((title, value),) = entry.items()
            if isinstance(value, list):
                children = _present(value, docs_dir)
                if children:
                    kept.append({title: children})
            elif "://" in value or (docs_dir / value).is_file():
                kept.append(entry)
            else:
                log.info("nav: leaving out %s (%s), which does not exist yet", title, value)
        elif isinstance(entry, str) and (docs_dir / entry).is_file():
            kept.append(entry)
    return kept


def on_config(config: Any) -> Any:
    if config.nav:
        config.nav = _present(config.nav, Path(config.docs_dir))
    return config


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    return gen_reference.fill(markdown, page.file.src_path)
