"""docs/img/metrics-*.png: the admin's Overview and Groups pages drawing the figures GET /api/metrics serves, after a
day of real ticks.

    python -m bench.metrics_screenshot [--out docs/img]

No Grafana runs here offline (Debian ships none; PyPI's `grafana` is a placeholder), so the screenshot is of the
admin's own figures page, which reads the same per-minute rings and job counts as the scrape: jobs by status and due
(crontick_jobs, crontick_jobs_due, crontick_oldest_due_job_age_seconds), per type the last hour's attempts, slow ones
and p50/p95 (crontick_job_attempts_last_hour, crontick_slow_jobs_last_hour, crontick_job_duration_seconds_last_hour),
and the day's ticks; the Groups page, each rate limit's starts in its window against its count (crontick_rate_limit_starts,
crontick_rate_limit_capacity). A fresh database on CRONTICK_BENCH_DATABASE_URL (else CRONTICK_TEST_DATABASE_URL) gets 24
hourly ticks, each run with `now` an hour apart (the tick takes its time as a parameter), then the app is served on
loopback and Debian's chromium (Playwright) signs in and takes the page; the scrape's own text is printed beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg

import crontick
from bench.admin_scale import database
from crontick.app import create_app
from tests.support.admin_pages import ADMIN_SECRET, VIEWER_SECRET, settings_for
from tests.support.constants import ROOT
from tests.support.core_jobs import tick
from tests.support.servers import serve

OUT = ROOT / "docs" / "img"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LIMIT = "llm-provider"
HOURS = 24
rand = random.Random(37)  # the same day every run


async def _nap(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "ok"


@crontick.handler("send_welcome_email")
async def send_welcome_email(payload: Any, job: crontick.Job) -> None:
    await asyncio.sleep(0.005)


@crontick.handler("sync_crm")
async def sync_crm(payload: Any, job: crontick.Job) -> None:
    await asyncio.sleep(0.04)
    if payload["flaky"] and job.attempt == 1:
        raise ConnectionError("crm.example.com answered 502")


@crontick.handler("build_report")
async def build_report(payload: Any, job: crontick.Job) -> None:
    await job.step("query", _nap, 0.05)
    await job.step("render", _nap, payload["render_seconds"])


@crontick.handler("whatsapp_reply", rate_limit=LIMIT)
async def whatsapp_reply(payload: Any, job: crontick.Job) -> None:
    await job.step("llm", _nap, 0.1)


def _day(url: str) -> None:
    """24 hourly ticks over a day's enqueues: quick mails, a flaky sync, reports (some slow), rate-limited replies."""
    settings = settings_for(url, time_budget_seconds=8.0, lease_seconds=40.0, slow_job_seconds=0.5)
    with psycopg.connect(url, autocommit=True) as conn:
        base: datetime = conn.execute("select now() - interval '5 seconds'").fetchone()[0]  # type: ignore[index]
        for hour in range(HOURS - 1, -1, -1):
            at = base - timedelta(hours=hour)
            with conn.transaction():
                for _ in range(rand.randint(20, 40)):
                    crontick.enqueue(conn, "send_welcome_email", {}, run_after=at)
                for _ in range(rand.randint(3, 8)):
                    crontick.enqueue(conn, "sync_crm", {"flaky": rand.random() < 0.3}, run_after=at)
                for _ in range(2):
                    crontick.enqueue(
                        conn, "build_report", {"render_seconds": rand.choice((0.1, 0.2, 0.7))}, run_after=at
                    )
                for _ in range(4 if hour else 12):
                    crontick.enqueue(conn, "whatsapp_reply", {}, run_after=at)
            # A day ago its starts were another hour's: the window counts from the tick's own time.
            conn.execute("update crontick_rate_limits set starts_at = '{}', starts_n = '{}'")
            tick(url, settings, now=at)  # the failed syncs' retries come due by the next hour's tick


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    crontick.rate_limit(LIMIT, 5, per_seconds=60)
    server = os.environ.get("CRONTICK_BENCH_DATABASE_URL") or os.environ["CRONTICK_TEST_DATABASE_URL"]
    with database(server) as url:
        _day(url)
        with serve(create_app(settings_for(url))) as base:
            scrape = httpx.get(f"{base}/api/metrics", headers={"Authorization": f"Bearer {VIEWER_SECRET}"}).text
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
                page.goto(base + "/admin")
                page.fill("input[name=secret]", ADMIN_SECRET)
                page.click("button[type=submit]")
                for name in ("overview", "groups"):
                    page.goto(f"{base}/admin/{name}")
                    page.screenshot(path=str(args.out / f"metrics-{name}.png"), full_page=True)
                browser.close()
    print("\n".join(line for line in scrape.splitlines() if not line.startswith("#") and "_bucket" not in line))
    print(f"wrote {args.out}/metrics-overview.png and metrics-groups.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
