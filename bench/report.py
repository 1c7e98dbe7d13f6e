"""The benchmark's plain-text table and its JSON (bench/results/latest.json); bench/summary.py composes the tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"


def table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:  # the first column left-aligned, numbers right-aligned
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))

    return "\n".join([title, line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def target(name: str, value: float, goal: float, sense: str) -> dict[str, Any]:
    """One row of the targets table: `value` against `goal` in `sense` (≥ or ≤)."""
    met = value >= goal if sense == "≥" else value <= goal
    shown = f"{value:,.0f}" if goal >= 1000 else f"{value:.2f}"
    return {"name": name, "value": value, "measured": shown, "goal": f"{sense} {goal:,g}", "met": met}


def write(results: dict[str, Any], path: Path = RESULTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
