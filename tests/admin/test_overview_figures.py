"""The per-type figures' pure parts: percentiles from duration buckets, worst first, and what build() merges."""

from __future__ import annotations

from crontick.admin.overview import figures


def test_a_percentile_is_the_middle_of_the_bucket_that_holds_it() -> None:
    assert figures.percentile({}, 0.5) is None
    counts = {6: 90, 14: 10}  # 90 attempts near 10 ms, 10 near 160 ms
    assert figures.percentile(counts, 0.5) == figures.bucket_ms(6) == 9.5
    assert figures.percentile(counts, 0.95) == figures.bucket_ms(14) == 152.2
    assert 8 <= figures.bucket_ms(6) <= 11.3  # bucket 6 holds 8 to 11.3 ms: within about 20 % of either end


def test_build_merges_the_ring_the_pending_and_the_paused_worst_first() -> None:
    ring = [
        {"type": "ok", "bucket": 6, "last_hour": True, "done": 50, "failed": 0, "retried": 0, "slow": 0},
        {"type": "ok", "bucket": 6, "last_hour": False, "done": 500, "failed": 0, "retried": 0, "slow": 0},
        {"type": "sick", "bucket": 20, "last_hour": True, "done": 5, "failed": 5, "retried": 3, "slow": 2},
        {"type": "was_sick", "bucket": 8, "last_hour": False, "done": 10, "failed": 10, "retried": 0, "slow": 0},
    ]
    pending = [{"type": "stuck", "oldest_wait_seconds": 612.5}, {"type": "ok", "oldest_wait_seconds": -30.0}]
    out = figures.build(ring, pending, {"stuck"})
    assert [t["type"] for t in out] == ["sick", "was_sick", "stuck", "ok"]
    ok = next(t for t in out if t["type"] == "ok")
    assert (ok["done_1h"], ok["done_24h"], ok["failed_24h"], ok["oldest_due_seconds"]) == (50, 550, 0, None)
    assert ok["p50_ms"] == figures.bucket_ms(6) and not ok["paused"]
    stuck = next(t for t in out if t["type"] == "stuck")
    assert stuck["paused"] and stuck["oldest_due_seconds"] == 612.5 and stuck["p50_ms"] is None
    sick = out[0]
    assert (sick["done_1h"], sick["failed_1h"]) == (5, 5) and sick["p95_ms"] == figures.bucket_ms(20)
    assert (sick["slow_1h"], sick["slow_24h"], ok["slow_24h"]) == (2, 2, 0)
