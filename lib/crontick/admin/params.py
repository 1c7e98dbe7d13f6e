"""The admin's query parameters, path segments and form fields, each read within its bounds: a bad value is a 400."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, timezone
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from crontick.errors import CrontickError
from crontick.text import can_store, key_too_long

# bigint: a larger id names no row, and psycopg would send it as numeric, which no index on id serves.
MAX_ID = 2**63 - 1
ID_MAX_DIGITS = len(str(MAX_ID))
TEXT_MAX_CHARS = 200
# A containment filter deeper than this is a mistake or an attack; Python's own parser gives up
# near 1,000 levels with a RecursionError, and what it does take must still be re-encoded.
JSON_MAX_DEPTH = 32
# The longest IANA name is 32 characters (America/Argentina/ComodRivadavia); none has a dot.
ZONE_MAX_CHARS = 64
_ZONE_SHAPE = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
_SHOWN_CHARS = 40
FILTER_EXAMPLE = '{"user_id": 42}'


class BadParameter(CrontickError):
    """A value the admin cannot use, named; the page or the API answers 400 with this message."""

    def __init__(self, name: str, expected: str, got: str) -> None:
        self.name = name
        super().__init__(f"{name}: expected {expected}, got: {shown(got)}")


def shown(text: str) -> str:
    """A bad value as a short quote: never all 5,000 digits of one, and never a raw control character."""
    cut = text[:_SHOWN_CHARS]
    return repr(cut) + ("…" if len(text) > _SHOWN_CHARS else "")


def storable(text: str) -> bool:
    """True when PostgreSQL can store `text`: no NUL (text refuses it) and no lone surrogate (not UTF-8)."""
    return can_store(text)


def name_problem(value: str) -> str | None:
    """Why `value` cannot name a group, a job type or a rate limit (an API path segment, a Groups form field, a
    groups cursor, a CLI argument), else None. A name is 1 to crontick.text.KEY_MAX_BYTES bytes of UTF-8 that
    PostgreSQL can store: the longest group_key an enqueue accepts, so every group with jobs can be paused,
    ended and paged past. The callers say it as their own 400 (or CrontickError)."""
    if not value:
        return "expected a name, got an empty one"
    if problem := key_too_long("a name", value):
        return problem
    if not storable(value):
        return f"expected a name without NUL or lone surrogates, got: {shown(value)}"
    return None


def row_id(text: str | None) -> int | None:
    """An id from a URL or a form (1 to 2^63-1, ASCII digits), or None when `text` cannot be one.

    Checked before int(): Python refuses int() of more than 4,300 digits, and '²'.isdigit() is
    true while int('²') raises.
    """
    if not text or len(text) > ID_MAX_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if 1 <= value <= MAX_ID else None


def required_id(text: str | None, name: str) -> int:
    """row_id(), or BadParameter when a value was given that cannot be an id; 0 when absent."""
    if not text:
        return 0
    value = row_id(text)
    if value is None:
        raise BadParameter(name, f"an id from 1 to {MAX_ID} (digits)", text)
    return value


def text(value: str | None, name: str, *, max_chars: int = TEXT_MAX_CHARS) -> str:
    """Text PostgreSQL can store, at most `max_chars` long, surrounding spaces removed; "" when absent."""
    if value is None:
        return ""
    if len(value) > max_chars or not storable(value):
        raise BadParameter(name, f"text of at most {max_chars} characters without NUL", value)
    return value.strip()


def choice(value: str | None, name: str, allowed: tuple[str, ...]) -> str:
    """One of `allowed`, or "" when absent."""
    if not value:
        return ""
    if value not in allowed:
        raise BadParameter(name, f"one of {', '.join(allowed)}", value)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_object(value: str | None, name: str) -> dict[str, Any] | None:
    """A JSON object that PostgreSQL's jsonb takes, or None when absent.

    At most JSON_MAX_DEPTH levels deep, no NaN or Infinity, and no \\u0000 or lone surrogate in
    a key or a string: jsonb refuses each of them, which would otherwise surface as a 500.
    """
    if not value:
        return None
    expected = f"a JSON object such as {FILTER_EXAMPLE}"
    try:
        parsed = json.loads(value, parse_constant=_no_constant)
    except RecursionError:
        raise BadParameter(name, f"JSON nested at most {JSON_MAX_DEPTH} levels deep", value) from None
    except ValueError:  # JSONDecodeError, NaN, and an integer over 4,300 digits
        raise BadParameter(name, expected, value) from None
    if not isinstance(parsed, dict):
        raise BadParameter(name, expected, value)
    check_json(parsed, name)
    return parsed


def check_json(value: Any, name: str) -> None:
    """BadParameter unless jsonb can store `value` (see json_object); walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list) and depth > JSON_MAX_DEPTH:
            raise BadParameter(name, f"JSON nested at most {JSON_MAX_DEPTH} levels deep", f"{depth} levels or more")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str) or not storable(key):
                    raise BadParameter(name, "JSON keys without \\u0000 or lone surrogates", str(key))
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str) and not storable(item):
            raise BadParameter(name, "JSON strings without \\u0000 or lone surrogates", item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise BadParameter(name, "finite JSON numbers", repr(item))


def zone(name: str | None) -> tuple[ZoneInfo | timezone, str | None]:
    """The display zone ?tz= names, and a note for the page when it falls back to UTC.

    A well-formed name this server's tz database does not know gives UTC and a note, so a link
    made on a newer server still opens. A value that cannot be a zone at all (too long, a
    character no zone has, a region such as `America`) is a BadParameter.
    """
    if not name:
        return UTC, None
    expected = "an IANA time zone such as Europe/Amsterdam"
    if len(name) > ZONE_MAX_CHARS or not _ZONE_SHAPE.fullmatch(name):
        raise BadParameter("tz", expected, name)
    try:
        return ZoneInfo(name), None
    # OSError: with the tzdata package, a region opens as a directory (IsADirectoryError).
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    if name in _regions():
        raise BadParameter("tz", f"a zone inside the region, such as {name}/{_regions()[name]}", name)
    return UTC, f"Unknown time zone {name!r}: times are shown in UTC. Use an IANA name such as Europe/Amsterdam."


@lru_cache(maxsize=1)
def _regions() -> dict[str, str]:
    """Each folder of the tz database (America, America/Argentina, …) with one zone inside it.

    Read once, and only after a name failed to load: a valid zone never pays for the listing.
    """
    regions: dict[str, str] = {}
    for key in sorted(available_timezones()):
        parts = key.split("/")
        for cut in range(1, len(parts)):
            regions.setdefault("/".join(parts[:cut]), "/".join(parts[cut:]))
    return regions
