"""The Overview page (counts, the scheduler's health, the hourly chart, the per-type figures) and the Ticks page."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import gate, render
from crontick.admin.overview import figures, store
from crontick.admin.view import PAGE_ROWS, View
from crontick.jobs.queue import STATUSES


def summary_items(summary: Any) -> list[tuple[str, str]]:
    """A tick's summary as short key/value pairs for one table cell (nested counts flattened)."""
    if not isinstance(summary, dict):
        return []
    items: list[tuple[str, str]] = []
    for key, value in summary.items():
        if isinstance(value, dict):
            items.extend((f"{key}.{k}", str(v)) for k, v in value.items() if v not in (0, None, [], {}))
        elif value not in (0, None, [], {}, ""):
            items.append((key, str(value)))
    return items


async def ticks(request: Request) -> Response:
    async def build(view: View) -> Response:
        before = view.cursor()
        result = await view.panel(lambda tx: store.list_ticks(tx, before_id=before, limit=PAGE_ROWS))
        rows, next_cursor = result if result is not None else (None, None)
        for row in rows or []:
            row["duration_seconds"] = (row["finished_at"] - row["started_at"]).total_seconds()
        data = {"ticks": rows, "next_cursor": next_cursor}
        if view.json:
            return view.page("ticks.html", data, title="Ticks", nav="ticks")
        return view.page("ticks.html", {**data, "summary_items": summary_items}, title="Ticks", nav="ticks")

    return await gate.page(request, build)


async def overview(request: Request) -> Response:
    async def build(view: View) -> Response:
        stats = await view.panel(store.stats)
        types = await view.panel(figures.type_figures)  # worst first
        data = {"stats": stats, "statuses": STATUSES, "types": types}
        if view.json:
            return view.page("overview.html", data, title="Overview", nav="overview")
        hours = render.last_24_hours((stats or {}).get("hourly") or [], view.now)
        return view.page("overview.html", {**data, "chart": render.chart(hours)}, title="Overview", nav="overview")

    return await gate.page(request, build)
