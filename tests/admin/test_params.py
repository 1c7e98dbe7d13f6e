"""The admin's parameter rules as pure functions (crontick.admin.params): ids, zones, JSON filters, messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from crontick.admin import params

HUGE = "1" * 4301
DEEP = "[" * 2000 + "]" * 2000


def test_row_id_takes_ascii_digits_of_a_bigint_only() -> None:
    assert params.row_id("42") == 42 and params.row_id(str(params.MAX_ID)) == params.MAX_ID
    for text in ["", "0", "-1", "\u00b2", "\u0661", "1" * 20, HUGE, str(params.MAX_ID + 1), "1.0", " 1"]:
        assert params.row_id(text) is None, text[:20]


@pytest.mark.parametrize(
    "name", ["Europe/Amsterdam", "UTC", "America/Argentina/ComodRivadavia", "Etc/GMT+5", "America/Port-au-Prince"]
)
def test_real_zones_load(name: str) -> None:
    tz, note = params.zone(name)
    assert note is None and str(tz) == name


def test_names_that_cannot_be_zones_are_bad_parameters() -> None:
    for name in ["America", "America/Argentina", "A" * 300, "\x00", "../etc/passwd", "/etc/passwd", "zone.tab", "a b"]:
        with pytest.raises(params.BadParameter, match="^tz: expected .*, got: "):
            params.zone(name)
    tz, note = params.zone("Mars/Olympus")
    assert note is not None and "Unknown time zone" in note and str(tz) == "UTC"


def test_json_filters_are_bounded_and_storable() -> None:
    assert params.json_object('{"a": [1, {"b": "c"}]}', "payload") == {"a": [1, {"b": "c"}]}
    nested: Any = 1
    for _ in range(params.JSON_MAX_DEPTH - 1):
        nested = [nested]
    assert params.json_object(json.dumps({"a": nested}), "payload") is not None  # exactly at the bound
    for text in [
        json.dumps({"a": [nested]}),
        '{"a":' + DEEP + "}",
        '{"a": "\\u0000"}',
        '{"a": Infinity}',
        '{"a": ' + "1" * 5000 + "}",  # int() refuses it inside the parser
        "[1]",
    ]:
        with pytest.raises(params.BadParameter, match="^payload: expected "):
            params.json_object(text, "payload")


def test_a_bad_value_is_shown_short_and_printable() -> None:
    message = str(params.BadParameter("type", "text", "\x00" + "x" * 5000))
    assert message.startswith("type: expected text, got: '\\x00xxx") and message.endswith("…") and len(message) < 80
