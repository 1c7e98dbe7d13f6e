"""GET /api/metrics over real HTTP: Prometheus text that prometheus_client's own parser reads, the figures of a real
tick, the admin's secrets, and a constant two statements whatever the rows (capped counts)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families

import crontick
from crontick import db
from crontick.admin import metrics
from crontick.admin.metrics import Family, exposition
from tests.admin.api_support import ADMIN, VIEWER, api_settings, insert_jobs
from tests.support.core_jobs import db_now, tick
from tests.support.wire import traced


@crontick.handler("t_metrics.ok")
def ok(payload: Any, job: crontick.Job) -> None:
    pass


@crontick.handler("t_metrics.fails")
def fails(payload: Any, job: crontick.Job) -> None:
    raise ValueError("fails, to be retried")


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} of every sample, as Prometheus's own parser reads them."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_scrape_after_a_tick_reads_the_jobs_attempts_durations_and_the_last_tick(
    database_url: str, conn: psycopg.Connection[Any], live_app: Callable[..., Any]
) -> None:
    for n in range(3):
        crontick.enqueue(conn, "t_metrics.ok", {"n": n})
    crontick.enqueue(conn, "t_metrics.fails", {})
    crontick.enqueue(conn, "t_metrics.ok", {"later": True}, run_after=db_now(conn).replace(year=2100))
    insert_jobs(conn, 2, status="failed", type="t_metrics.old")
    settings = api_settings(database_url)
    tick(database_url, settings, now=db_now(conn))
    conn.execute("update jobs set run_after = now() - interval '5 minutes' where type = 't_metrics.fails'")
    with live_app(settings) as base:
        answer = httpx.get(f"{base}/api/metrics", headers=VIEWER)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    got = _samples(answer.text)
    assert got["crontick_jobs", (("status", "done"), ("type", "t_metrics.ok"))] == 3
    assert got["crontick_jobs", (("status", "pending"), ("type", "t_metrics.ok"))] == 1
    assert got["crontick_jobs", (("status", "pending"), ("type", "t_metrics.fails"))] == 1
    assert got["crontick_jobs", (("status", "failed"), ("type", "t_metrics.old"))] == 2
    assert got["crontick_jobs_due", ()] == 1  # the retry moved back; the one due in 2100 is not
    assert 290 < got["crontick_oldest_due_job_age_seconds", ()] < 400
    assert 0 <= got["crontick_last_tick_age_seconds", ()] < 60
    assert got["crontick_job_attempts_last_hour", (("outcome", "done"), ("type", "t_metrics.ok"))] == 3
    assert got["crontick_job_attempts_last_hour", (("outcome", "retried"), ("type", "t_metrics.fails"))] == 1
    assert got["crontick_job_duration_seconds_last_hour_count", (("type", "t_metrics.ok"),)] == 3
    assert got["crontick_job_duration_seconds_last_hour_bucket", (("le", "+Inf"), ("type", "t_metrics.ok"))] == 3
    assert got["crontick_job_duration_seconds_last_hour_bucket", (("le", "16777.216"), ("type", "t_metrics.ok"))] == 3
    assert got["crontick_tick_jobs_last_hour", (("outcome", "succeeded"),)] == 3
    assert got["crontick_tick_jobs_last_hour", (("outcome", "retried"),)] == 1
    assert got["crontick_ticks_last_hour", ()] == 1
    assert got["crontick_reminders", (("status", "sent"),)] == 0


def test_an_empty_queue_answers_every_series_and_no_tick_ever_is_an_infinite_age(
    database_url: str, live_app: Callable[..., Any]
) -> None:
    with live_app(api_settings(database_url)) as base:
        answer = httpx.get(f"{base}/api/metrics", headers=ADMIN)
    assert answer.status_code == 200
    got = _samples(answer.text)
    assert got["crontick_last_tick_age_seconds", ()] == float("inf")
    assert got["crontick_jobs_due", ()] == 0
    assert not [k for k in got if k[0] == "crontick_jobs"]
    assert got["crontick_wakeups_last_day", (("outcome", "booked"),)] == 0
    assert got["crontick_wakeups_last_day", (("outcome", "failed"),)] == 0
    assert got["crontick_wakeup_next_booked_timestamp_seconds", ()] == 0  # none booked


def test_a_scrape_reads_the_wakeups_booked_and_failed_and_the_next_one(
    database_url: str, conn: psycopg.Connection[Any], live_app: Callable[..., Any]
) -> None:
    """The rows crontick.wakers.booking leaves: two instants booked ahead, one of them failed, one a day and more ago."""
    near, far = conn.execute(
        "select date_trunc('second', now()) + interval '10 minutes', date_trunc('second', now()) + interval '1 hour'"
    ).fetchone()
    conn.execute("select crontick.crontick_wakeup_claim(%s, 'qstash')", (far,))
    conn.execute("select crontick.crontick_wakeup_claim(%s, 'qstash', _error => 'QStash answered 500')", (near,))
    conn.execute("insert into crontick_wakeups (instant, provider, booked_at) values (now() - interval '25 hours',"
                 " 'qstash', now() - interval '25 hours')")  # fmt: skip
    with live_app(api_settings(database_url)) as base:
        got = _samples(httpx.get(f"{base}/api/metrics", headers=VIEWER).text)
    assert got["crontick_wakeups_last_day", (("outcome", "booked"),)] == 1
    assert got["crontick_wakeups_last_day", (("outcome", "failed"),)] == 1
    assert got["crontick_wakeup_next_booked_timestamp_seconds", ()] == far.timestamp()  # the failed one is not booked


def test_without_a_secret_401_and_with_the_admin_closed_503_both_json(
    database_url: str, live_app: Callable[..., Any]
) -> None:
    with live_app(api_settings(database_url)) as base:
        refused = httpx.get(f"{base}/api/metrics", headers={"Authorization": "Bearer wrong-" + "x" * 40})
        bare = httpx.get(f"{base}/api/metrics")
    assert (refused.status_code, refused.json()["error"], bare.status_code) == (401, "unauthorized", 401)
    with live_app(api_settings(database_url, admin_secret=None, admin_viewer_secret=None)) as base:
        closed = httpx.get(f"{base}/api/metrics")
    assert (closed.status_code, closed.json()["error"]) == (503, "admin_not_configured")


def test_a_scrape_is_two_statements_and_counts_stop_at_the_cap(
    database_url: str, conn: psycopg.Connection[Any], monkeypatch: Any
) -> None:
    monkeypatch.setattr(metrics, "COUNT_CAP", 50)
    insert_jobs(conn, 120, status="done", type="t_metrics.many")
    insert_jobs(conn, 70, status="pending", type="t_metrics.many")
    figures, sent = traced(database_url, metrics.read_figures)
    statements = [name for name in sent if name in db.QUERIES]  # the others: the transaction's BEGIN and COMMIT
    assert (statements, len(sent)) == (["admin_read_begin", "metrics_read"], 4)
    got = _samples(exposition(metrics.families(figures)))
    assert got["crontick_jobs", (("status", "done"), ("type", "t_metrics.many"))] == 50
    assert got["crontick_jobs", (("status", "pending"), ("type", "t_metrics.many"))] == 50
    assert got["crontick_jobs_due", ()] == 50


def test_label_values_are_escaped_so_a_job_type_cannot_forge_a_series() -> None:
    forged = 'x"} 1\ncrontick_jobs_due{a="b'
    text = exposition([Family("crontick_jobs", "gauge", "help with \\ and\nnewline", [("", {"type": forged}, 7)])])
    [family] = list(text_string_to_metric_families(text))
    assert [(s.labels, s.value) for s in family.samples] == [({"type": forged}, 7)]


def test_the_scrape_reads_jobs_through_indexes_only(database_url: str, conn: psycopg.Connection[Any]) -> None:
    """No sequential scan of jobs, so a scrape costs the same at a million rows (bench.metrics_scale measures it)."""
    for n in range(4):
        insert_jobs(conn, 40_000, status="done", type=f"t_metrics.t{n}")
        insert_jobs(conn, 2_000, status="pending", type=f"t_metrics.t{n}")
    conn.execute("vacuum analyze jobs")
    limit = '[{"name": "t_metrics.limit", "count": 1, "seconds": 60, "types": ["t_metrics.t0", "t_metrics.t1"]}]'
    statement = db.query("metrics_read").replace("%(cap)s", "10000").replace("%(types)s", "1000")
    statement = statement.replace("%(limits)s", f"'{limit}'")  # a declared rate limit: its held jobs' count too
    plan = "\n".join(row[0] for row in conn.execute("explain " + statement).fetchall())  # type: ignore[operator]
    assert "Seq Scan on jobs" not in plan, plan
