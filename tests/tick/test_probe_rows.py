"""The probe's row, declared once in crontick.tick.probe: Probe's fields are crontick_tick_probe's columns, in order."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.tick.probe import Probe
from tests.support.sql_rows import output_columns

PROBE = "crontick_tick_probe(timestamptz, int, interval, text, jsonb, text, jsonb, jsonb)"


def test_probe_is_the_functions_row(conn: psycopg.Connection[Any]) -> None:
    assert output_columns(conn, PROBE) == Probe._fields
