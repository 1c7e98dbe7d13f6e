"""tick_probe claims jobs exactly as job_claim_due does: one claim, written twice, held equal by this test.

Named statements cannot share text (no SQL is built from strings), and the probe has to claim in
its own round trip, while the rescue's second claim and a drain's later batches need the claim
alone. So the claim is written in both, and this test fails the moment the two differ.
"""

from __future__ import annotations

import re

from crontick import db


def claim_ctes(name: str) -> str:
    """The text from the first CTE (the tick's time: the caller's or the database's) through the due rows
    (SKIP LOCKED) to the end of the UPDATE … RETURNING."""
    text = db.query(name).replace("due_jobs", "due")
    found = re.search(r"with clock as \(.*?returning [^\n]*\n\)", text, re.DOTALL)
    assert found is not None, f"expected the claim CTEs in {name}"
    return found.group(0)


def test_the_probe_claims_as_job_claim_due_does() -> None:
    probe, claim = claim_ctes("tick_probe"), claim_ctes("job_claim_due")
    assert "for update skip locked" in claim and "attempts = j.attempts + 1" in claim
    assert "coalesce(%(now)s::timestamptz, now())" in claim  # the database's clock unless a time is passed
    assert probe == claim
