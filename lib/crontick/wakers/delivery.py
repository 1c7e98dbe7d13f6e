"""What a wake-up's delivery carries: the instant it was booked for, read from the tick's body or event.

Every provider delivers `{"crontick": "tick", "instant": "<ISO 8601 UTC>"}` (crontick.wakers.base.tick_body):
the body of QStash's, Cloud Tasks' and Vercel Queues' calls, the Input of EventBridge's. The tick records the
instant as served, answers a second delivery for it as a duplicate without running (crontick.runtime), and
measures how early a delivery came by the database's clock (crontick.wakers.booking.book_next).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from crontick import logs


def delivered_instant(data: bytes | Mapping[str, Any]) -> datetime | None:
    """The instant a delivery was booked for; None for any other body (a scheduler's call, or none at all).

    A body that says `"crontick": "tick"` with an `instant` that is not an ISO 8601 time with its offset
    is logged (`wakeup_instant_unreadable`) and treated as no instant: the tick runs as any other would.
    """
    if isinstance(data, bytes | bytearray):
        try:
            data = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return None
    if not isinstance(data, Mapping) or data.get("crontick") != "tick" or "instant" not in data:
        return None
    value = data["instant"]
    try:
        instant = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        logs.warning(
            "wakeup_instant_unreadable", detail=f"expected an ISO 8601 time with its offset, got: {value!r:.80}"
        )
        return None
    return instant
