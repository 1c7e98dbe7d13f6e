"""The Overview page's wake-ups (CRONTICK_WAKER): the next booked, booked and failed in the last day, the last failure."""

from __future__ import annotations

from typing import Any

import psycopg

from tests.support.admin_pages import running, settings_for, signed_in


def test_the_overview_shows_booked_and_failed_wakeups_with_a_waker_set(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    instants = conn.execute("select now() + interval '90 minutes', now() + interval '3 hours'").fetchone()
    conn.execute("select crontick.crontick_wakeup_claim(%s, 'qstash')", (instants[0],))  # booked
    # the provider refused the other one's call: its one statement records the failure
    conn.execute("select crontick.crontick_wakeup_claim(%s, 'qstash', _error => 'QStash answered 503 <b>')",
                 (instants[1],))  # fmt: skip
    waker = settings_for(database_url, waker="qstash", qstash_token="t", public_url="http://127.0.0.1:9")
    with running(waker) as base:
        page = signed_in(base).get("/admin/overview").text
    assert "<h2>Wake-ups</h2>" in page
    assert '<span class="n">in 1.5 h</span><span class="l">next booked wake-up</span>' in page
    assert '<span class="n">1</span><span class="l">booked, last 24 h</span>' in page
    assert '<div class="tile s-failed"><span class="n">1</span><span class="l">failed, last 24 h</span>' in page
    assert "<code>QStash answered 503 &lt;b&gt;</code>" in page  # escaped


def test_without_a_waker_and_no_wakeups_the_overview_has_no_such_section(database_url: str) -> None:
    with running(settings_for(database_url)) as base:
        page = signed_in(base).get("/admin/overview").text
    assert "Wake-ups" not in page and "<h1>Overview</h1>" in page
