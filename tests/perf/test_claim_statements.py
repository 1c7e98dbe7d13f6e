"""tick_probe claims jobs exactly as job_claim_due does: both run one claim, the function crontick_job_claim_due.

The probe has to claim in its own round trip, while the rescue's second claim and a drain's later
batches need the claim alone. Both statements are functions kept by the database
(sql/functions/tick_probe.sql, job_claim_due.sql), so this test reads them as migrated, from pg_proc: the
probe's function calls the claim's, no other statement of the two writes jobs, and the claim is
the one (SKIP LOCKED, the attempt counted, the database's clock) the tick relies on. It fails
the moment the probe claims in its own words again.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg

from crontick import db

CLAIM = "crontick_job_claim_due("


def function_source(conn: psycopg.Connection[Any], name: str) -> str:
    """The body of a function as the migrations left it (a later `create or replace` included)."""
    row = conn.execute("select prosrc from pg_proc where proname = %s", (name,)).fetchone()
    assert row is not None, f"expected the function {name} to be migrated"
    return " ".join(row[0].split()).lower()


def test_the_probe_claims_with_job_claim_dues_function(conn: psycopg.Connection[Any]) -> None:
    assert CLAIM in db.query("job_claim_due") and "crontick_tick_probe(" in db.query("tick_probe")
    probe, claim = function_source(conn, "crontick_tick_probe"), function_source(conn, "crontick_job_claim_due")
    assert probe.count(CLAIM) == 1
    # The claim's own words appear only in the claim: the probe takes no lock on jobs and writes none.
    assert not re.search(r"update jobs|for update|skip locked|status = 'running'\s*,", probe)
    assert "for update skip locked" in claim and "attempts = j.attempts + 1" in claim
    assert "coalesce(_now, now())" in claim  # the database's clock unless a time is passed
    # The probe hands the claim the time it compares everything else with.
    assert "coalesce(_now, now())" in probe and "crontick_job_claim_due(k.now," in probe
