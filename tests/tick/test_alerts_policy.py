"""Pure alert policy: the one-line text, durations, retry or close; and the per-tick statements' size."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from crontick import db
from crontick.tick import alerts

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (45, "45 s"),
        (60, "1 min"),
        (3725, "1 h 2 min"),
        (12005, "3 h 20 min"),
        (90000, "1 d 1 h"),
        (86400, "1 d"),
        (0, "0 s"),
    ],
)
def test_duration(seconds: float, shown: str) -> None:
    assert alerts.duration(seconds) == shown


def test_text_is_one_escaped_line_with_a_capped_error() -> None:
    body = {"job_id": 7, "job_type": "a<b>&c", "attempts": 4, "error": "line one\nline two " + "x" * 1000}
    line = alerts.text("job_failed", body)
    assert "\n" not in line and line.startswith(
        "crontick: job 7 (a&lt;b&gt;&amp;c) failed for good after 4 attempts: line one line two"
    )
    assert len(line) < alerts.ERROR_CHARS + 100 and line.endswith("…")


def test_payload_is_slack_compatible_with_the_ids() -> None:
    claimed = alerts.Claimed(
        5, "reminder_failed", {"booking_id": 3, "kind": "24h", "channel": "email", "error": "HTTP 422"}, 1, NOW
    )
    body = alerts.payload(claimed)
    assert body["text"] == "crontick: the 24h reminder for booking 3 failed for good over email: HTTP 422"
    assert (body["event"], body["booking_id"], body["kind"], body["alert_id"]) == ("reminder_failed", 3, "24h", 5)
    assert body["occurred_at"] == NOW.isoformat()


def test_a_failed_send_is_retried_with_backoff_then_closed() -> None:
    first = alerts.decide(alerts.Claimed(1, "job_failed", {}, 1, NOW), "HTTP 500", False, NOW, 0.5)
    assert first.retry_at == NOW + timedelta(minutes=1) and not first.sent
    last = alerts.decide(alerts.Claimed(1, "job_failed", {}, alerts.MAX_ATTEMPTS, NOW), "HTTP 500", False, NOW, 0.5)
    assert last.retry_at is None  # closed: failed, and no alert about it
    refused = alerts.decide(alerts.Claimed(1, "job_failed", {}, 1, NOW), "HTTP 404", True, NOW, 0.5)
    assert refused.retry_at is None


@pytest.mark.parametrize(
    "name",
    [
        "tick_probe",
        "job_record_outcomes",
        "job_rescue_expired",
        "reminder_claim_due",
        "reminder_record_outcomes",
        "alert_claim_due",
        "alert_record_outcomes",
        "retention_delete",
        "health_status",
    ],
)
def test_per_tick_statements_fit_psycopgs_parse_cache(name: str) -> None:
    """psycopg caches its parse of a statement only up to this length; the alert CTEs must not push one over."""
    assert len(db.query(name)) <= MAX_CACHED_STATEMENT_LENGTH
