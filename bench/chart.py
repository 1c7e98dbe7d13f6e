"""The benchmark's chart (bench/results/bench.svg, copied to docs/img/bench.svg): crontick beside its peers and the plain-SQL limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DOCS_COPY = Path(__file__).resolve().parent.parent / "docs" / "img" / "bench.svg"
PLAIN_LIMIT = "plain psycopg: claim 100, one UPDATE per batch"

CRONTICK = "#2563eb"  # in-process
CRONTICK_HTTP = "#93c5fd"
PEER = "#9ca3af"
PLAIN = "#f59e0b"


def _colour(name: str, over_http: bool) -> str:
    if name.startswith("crontick"):
        return CRONTICK_HTTP if over_http else CRONTICK
    return PLAIN if name.startswith("plain") else PEER


def _rows(results: dict[str, Any]) -> list[tuple[str, float, str]]:
    """(label, jobs/s, colour) for every drain, in-process and over HTTP, fastest first."""
    rows = [(r["system"], r["jobs_per_second"], _colour(r["system"], False)) for r in results["drain"]]
    rows += [(r["system"], r["jobs_per_second"], _colour(r["system"], True)) for r in results["http"]]
    return sorted(rows, key=lambda r: r[1])


def _goals(results: dict[str, Any]) -> list[tuple[str, float, float, bool]]:
    """(name, measured ÷ goal, goal, met) for each ratio target, so that 1.0 is the goal line."""
    out = []
    for t in results["targets"]:
        goal = float(t["goal"].split()[-1].replace(",", ""))
        if goal >= 1000:  # absolute throughput targets are in the left panel already
            continue
        higher_is_better = t["goal"].startswith("≥")
        score = t["value"] / goal if higher_is_better else goal / t["value"]
        out.append((f"{t['name']} ({t['measured']}, goal {t['goal']})", score, goal, bool(t["met"])))
    return out


def draw(results: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _rows(results)
    goals = _goals(results)
    jobs, runs = results["settings"]["jobs"], results["settings"]["runs"]
    fig, (left, right) = plt.subplots(
        2,
        1,
        figsize=(12, 0.34 * (len(rows) + len(goals)) + 2.6),
        gridspec_kw={"height_ratios": [len(rows), max(len(goals), 1)]},
    )
    labels, rates, colours = zip(*rows, strict=True)
    left.barh(labels, rates, color=colours)
    for y, rate in enumerate(rates):
        left.text(rate, y, f" {rate:,.0f}", va="center", fontsize=8)
    limit = next((r["jobs_per_second"] for r in results["drain"] if r["system"] == PLAIN_LIMIT), None)
    if limit:
        left.axvline(limit, color=PLAIN, linestyle="--", linewidth=1)
        left.text(limit, len(rows) - 0.4, " plain-SQL limit", color="#b45309", fontsize=8, va="bottom")
    left.set_title(
        f"Drain {jobs:,} no-op jobs, jobs/s, median of {runs} runs (blue: crontick; light: over HTTP)",
        fontsize=10,
    )
    left.tick_params(axis="y", labelsize=8)
    left.set_xlim(0, max(rates) * 1.15)
    if goals:
        names, scores, _, met = zip(*goals, strict=True)
        right.barh(names, scores, color=["#16a34a" if m else "#dc2626" for m in met])
        right.axvline(1.0, color="black", linewidth=1)
        right.set_title("Goals: measured ÷ goal (≥ 1 meets it; green met, red not)", fontsize=10)
        right.tick_params(axis="y", labelsize=8)
    machine = results["machine"]
    fig.text(
        0.01,
        0.005,
        f"{machine['cpus']} CPUs shared with other work, Python {machine['python']}; "
        "ratios are measured side by side in one run, absolute figures vary ±30 % between runs",
        fontsize=7,
        color="#6b7280",
    )
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    return fig


def write(results: dict[str, Any], paths: list[Path]) -> None:
    """Draw the chart and save it as SVG (text kept as text, no timestamp, stable ids) at each path."""
    import matplotlib

    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["svg.hashsalt"] = "crontick-bench"
    fig = draw(results)
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="svg", metadata={"Date": None})
