"""The admin's database plumbing: opaque cursors round-trip, and foreign ones are refused."""

from __future__ import annotations

import pytest

from crontick.admin import tx
from crontick.errors import BadCursor


def test_cursors_round_trip_and_foreign_ones_are_refused() -> None:
    assert tx.decode_cursor(tx.encode_cursor(1234)) == 1234
    assert tx.decode_cursor(None) is None
    for bad in ("nope", "djI6MQ", tx.encode_cursor(1)[:-1] + "!", "dj E6MA"):
        with pytest.raises(BadCursor):
            tx.decode_cursor(bad)
