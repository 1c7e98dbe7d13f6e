"""How admin pages look: the Jinja2 environment (autoescaped, built on first use), times, counts and the chart."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

COUNT_CAP = 10_000
ERROR_PREVIEW_CHARS = 200
CHART_WIDTH = 720
CHART_HEIGHT = 120


@lru_cache(maxsize=1)
def environment() -> Any:
    """The template environment; Jinja2 is imported here so the tick path never pays for it."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("crontick.admin", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(count=count, pretty=pretty, preview=preview, duration=duration)
    return env


def render(template: str, context: Mapping[str, Any]) -> str:
    return str(environment().get_template(template).render(**context))


def relative(then: datetime, now: datetime) -> str:
    """'3 min ago' or 'in 2 h': coarse on purpose, the exact time sits next to it."""
    seconds = (now - then).total_seconds()
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 45:
        text = f"{int(seconds)} s"
    elif seconds < 3600:
        text = f"{round(seconds / 60)} min"
    elif seconds < 86400 * 2:
        text = f"{seconds / 3600:.1f} h".replace(".0 h", " h")
    else:
        text = f"{int(seconds // 86400)} d"
    return f"in {text}" if ahead else f"{text} ago"


class Clock:
    """Formats instants for one page: its display zone and its `now`."""

    def __init__(self, tz: ZoneInfo | timezone, now: datetime) -> None:
        self.tz = tz
        self.now = now

    @property
    def zone_name(self) -> str:
        return "UTC" if self.tz is UTC else str(self.tz)

    def full(self, value: datetime | None) -> str:
        if value is None:
            return "—"
        local = value.astimezone(self.tz)
        return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or self.zone_name}"

    def hour(self, value: datetime) -> str:
        return f"{value.astimezone(self.tz):%H:%M}"

    def rel(self, value: datetime | None) -> str:
        return "" if value is None else relative(value, self.now)


def count(value: int | None, cap: int = COUNT_CAP) -> str:
    """1234 -> '1,234'; a count that hit its cap -> '10,000+' (the query stopped counting there)."""
    if value is None:
        return "—"
    return f"{cap:,}+" if value > cap else f"{value:,}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} d"


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def preview(text: str | None, chars: int = ERROR_PREVIEW_CHARS) -> str:
    if not text:
        return ""
    return text if len(text) <= chars else text[:chars] + "…"


def link(path: str, params: Mapping[str, Any]) -> str:
    """`path?query` with empty values left out, so shared links stay short."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return f"{path}?{urlencode(kept)}" if kept else path


def last_24_hours(hourly: Sequence[Mapping[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """Twenty-four hourly slots ending with the current hour; hours without a tick count zero."""
    by_hour = {h["hour"].astimezone(UTC): h for h in hourly if isinstance(h.get("hour"), datetime)}
    top = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    slots = []
    for back in range(23, -1, -1):
        hour = top - timedelta(hours=back)
        found = by_hour.get(hour, {})
        slots.append({"hour": hour, "done": int(found.get("done", 0)), "failed": int(found.get("failed", 0))})
    return slots


def chart(hours: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Bar geometry for the hourly done/failed chart, so the template only draws rectangles."""
    peak = max([int(h.get("done", 0)) + int(h.get("failed", 0)) for h in hours] + [1])
    slot = CHART_WIDTH / max(len(hours), 1)
    bars = []
    for i, h in enumerate(hours):
        done, failed = int(h.get("done", 0)), int(h.get("failed", 0))
        done_h = (CHART_HEIGHT - 14) * done / peak
        failed_h = (CHART_HEIGHT - 14) * failed / peak
        bars.append(
            {
                "x": round(i * slot + 1, 1),
                "w": round(max(slot - 2, 1), 1),
                "done_y": round(CHART_HEIGHT - done_h, 1),
                "done_h": round(done_h, 1),
                "failed_y": round(CHART_HEIGHT - done_h - failed_h, 1),
                "failed_h": round(failed_h, 1),
                "done": done,
                "failed": failed,
                "hour": h.get("hour"),
            }
        )
    return {"bars": bars, "peak": peak, "width": CHART_WIDTH, "height": CHART_HEIGHT}


def jsonable(value: Any) -> Any:
    """Page data as JSON: instants as ISO-8601 UTC, timedeltas as seconds."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
