"""The probe's row, declared once in crontick.tick.probe: Probe's first PROBE_WIDTH fields are crontick_tick_probe's
columns, in order."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.tick.claim import Claim
from crontick.tick.probe import PROBE_WIDTH, Probe
from tests.support.sql_rows import output_columns


def test_probe_is_the_functions_row(conn: psycopg.Connection[Any]) -> None:
    assert output_columns(conn, "crontick_tick_probe") == Probe._fields[:PROBE_WIDTH]


def test_a_claims_fields_are_probe_fields() -> None:
    """A drain's tick that claims instead of probing reads its Claim as a Probe, field by field (crontick.tick.pipeline.work)."""
    assert set(Claim._fields) <= set(Probe._fields)
