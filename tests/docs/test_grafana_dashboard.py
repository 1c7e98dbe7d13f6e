"""docs/grafana/crontick.json, the dashboard to start from: it reads only series a real scrape of GET /api/metrics
has, and shows every one of them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families

import crontick
from crontick.jobs import registry
from crontick.settings import Settings
from tests.support.constants import ROOT, TEST_SECRET
from tests.support.core_jobs import db_now, tick

DASHBOARD = ROOT / "docs" / "grafana" / "crontick.json"
VIEWER_SECRET = "viewer-" + "v" * 32
SERIES = re.compile(r"\bcrontick_[a-z_]+")


LIMIT = "t_grafana.provider"


@crontick.handler("t_grafana.ok")
def ok(payload: Any, job: crontick.Job) -> None:
    job.step("one", lambda: 1)  # so the step histogram has buckets


def expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_the_dashboard_is_importable_json_on_a_chosen_prometheus() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] == "crontick"
    (variable,) = dashboard["templating"]["list"]
    assert (variable["type"], variable["query"]) == ("datasource", "prometheus")
    for panel in dashboard["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
    for expr in expressions():
        assert expr.count("(") == expr.count(")"), expr


def test_every_series_the_dashboard_reads_is_scraped_and_every_scraped_series_is_shown(
    database_url: str, conn: psycopg.Connection[Any], live_app: Callable[..., Any]
) -> None:
    crontick.enqueue(conn, "t_grafana.ok", {})
    # A rate limit declared and named, so its series have samples; the handler is forgotten after the test.
    crontick.rate_limit(LIMIT, 1, per_seconds=60)
    crontick.handler("t_grafana.limited", rate_limit=LIMIT)(lambda payload, job: None)
    crontick.enqueue(conn, "t_grafana.limited", {})
    settings = Settings(
        database_url=database_url,
        cron_secret=TEST_SECRET,
        admin_secret="admin-" + "a" * 32,
        admin_viewer_secret=VIEWER_SECRET,
    )
    try:
        tick(database_url, settings, now=db_now(conn))  # so the histograms have buckets
        with live_app(settings) as base:
            answer = httpx.get(f"{base}/api/metrics", headers={"Authorization": f"Bearer {VIEWER_SECRET}"})
    finally:
        registry.unregister("t_grafana.limited")
    assert answer.status_code == 200, answer.text
    families = list(text_string_to_metric_families(answer.text))
    scraped = {sample.name for family in families for sample in family.samples}
    read = {name for expr in expressions() for name in SERIES.findall(expr)}
    assert {
        "crontick_job_duration_seconds_last_hour_bucket",
        "crontick_step_duration_seconds_last_hour_bucket",
    } <= scraped
    assert read - scraped == set()
    assert {family.name for family in families} - {re.sub(r"_bucket$", "", n) for n in read} == set()
