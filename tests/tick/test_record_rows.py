"""The record statements' rows, declared once in crontick.tick.record: Recorded's first RECORDED_WIDTH fields
are crontick_job_record_outcomes's columns, and crontick_job_record_and_claim's row is those and a claim's."""

from __future__ import annotations

from typing import Any

import psycopg

from crontick.tick.claim import Claim
from crontick.tick.record import RECORDED_WIDTH, Recorded
from tests.support.sql_rows import output_columns


def test_recorded_is_the_record_functions_row(conn: psycopg.Connection[Any]) -> None:
    assert output_columns(conn, "crontick_job_record_outcomes") == Recorded._fields[:RECORDED_WIDTH]


def test_record_and_claims_row_is_the_records_then_the_claims(conn: psycopg.Connection[Any]) -> None:
    columns = output_columns(conn, "crontick_job_record_and_claim")
    assert columns[:RECORDED_WIDTH] == Recorded._fields[:RECORDED_WIDTH]
    # The claim's columns, the two whose names the record's row already has renamed next_.
    assert len(columns) == RECORDED_WIDTH + len(Claim._fields)
    assert [c.removeprefix("next_") for c in columns[RECORDED_WIDTH:]] == list(Claim._fields)
