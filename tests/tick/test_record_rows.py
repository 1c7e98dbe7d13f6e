"""The record statements' rows, declared once in crontick.tick.record: Recorded's first RECORDED_WIDTH fields
are crontick_job_record_outcomes's columns, and crontick_job_record_and_claim's row is those and a claim's."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import psycopg

from crontick.jobs.job import Outcome
from crontick.tick.claim import Claim
from crontick.tick.record import RECORDED_WIDTH, Recorded, outcomes_statement
from tests.support.sql_rows import function_text, output_columns


def test_recorded_is_the_record_functions_row(conn: psycopg.Connection[Any]) -> None:
    assert output_columns(conn, "crontick_job_record_outcomes") == Recorded._fields[:RECORDED_WIDTH]


def test_record_and_claims_row_is_the_records_then_the_claims(conn: psycopg.Connection[Any]) -> None:
    columns = output_columns(conn, "crontick_job_record_and_claim")
    assert columns[:RECORDED_WIDTH] == Recorded._fields[:RECORDED_WIDTH]
    # The claim's columns, the two whose names the record's row already has renamed next_.
    assert len(columns) == RECORDED_WIDTH + len(Claim._fields)
    assert [c.removeprefix("next_") for c in columns[RECORDED_WIDTH:]] == list(Claim._fields)


def test_the_statement_reads_each_outcome_element_as_the_outcome_field_of_its_name() -> None:
    """Outcomes other than a plain success travel as JSON arrays, read by place (`o ->> 3`): the statement's
    outcome table names each place, and record's arrays hold Outcome's fields in that order."""
    text = function_text("job_record_outcomes")
    outcome = text[text.index("with outcome as materialized (") : text.index("), written as (")]
    named, _, read = outcome.partition("union all")
    names = [
        re.split(r"\.| as ", column.strip())[-1] for column in named.split("select", 1)[1].split("from")[0].split(",")
    ]
    places = list(dict.fromkeys(int(n) for n in re.findall(r"\bo ->>? (\d+)", read)))
    assert places == list(range(len(names)))  # the k-th column is read from element k
    assert ["job_id" if n == "id" else n for n in names] == list(Outcome._fields)

    park = ["nap", "sleep", None, "done", {"until": "x"}, None, None]
    at = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
    sent = Outcome(7, 2, "pending", 1, at, "why", True, "trace", park)
    (element,) = outcomes_statement([sent], datetime(2026, 1, 5, tzinfo=UTC)).params["others"].obj
    assert element == [*sent[:4], at.isoformat(), *sent[5:]]
