"""/api/health with a waker set (CONTRACT.md "Precise wake-ups"): the next booked wake-up and the last failure, and
`stale` once due work has waited more than CRONTICK_WAKEUP_GRACE_SECONDS unpicked; work held back is not due."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import httpx
import psycopg

import crontick
from tests.support import flow_handlers, noop_jobs
from tests.support.credentials import QSTASH_CURRENT
from tests.support.http_checks import AUTH, HEALTH, TICK, LiveApp
from tests.support.qstash_server import QStashStandIn, qstash_stand_in
from tests.tick.support import settings_for

TOKEN = "qstash-token-for-the-stand-in"
assert flow_handlers.LIMIT_NAME  # imported for its handlers: t_flow.limited names a rate limit
GRACE = 300


@crontick.handler("t_health_wakeups.job")
def job(payload: Any, job: crontick.Job) -> None:
    pass


@contextmanager
def waking(live_app: LiveApp, database_url: str) -> Iterator[tuple[str, QStashStandIn]]:
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = settings_for(database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                                public_url="http://127.0.0.1:9", wakeup_grace_seconds=GRACE)  # fmt: skip
        with live_app(settings) as url:
            yield url, stand_in


def health(url: str) -> tuple[dict[str, Any], int]:
    plain, strict = httpx.get(url + HEALTH), httpx.get(url + HEALTH, params={"strict": "1"})
    assert plain.status_code == 200 and plain.json() == strict.json()
    body: dict[str, Any] = plain.json()
    return body, strict.status_code


def overdue(conn: psycopg.Connection[Any], type: str, seconds: float, **columns: Any) -> int:
    """A pending job due `seconds` ago that no tick has picked up."""
    row = conn.execute(
        "insert into jobs (type, payload, run_after, group_key) values (%(t)s, '{}', now() - make_interval(secs => "
        "%(s)s), %(g)s) returning id",
        {"t": type, "s": seconds, "g": columns.get("group_key")},
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_due_work_unpicked_past_the_grace_is_stale_with_its_reason(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with waking(live_app, database_url) as (url, _):
        assert httpx.post(url + TICK, headers=AUTH).status_code == 200  # the scheduler is fine
        overdue(conn, noop_jobs.NOOP, GRACE - 30)
        within, within_strict = health(url)
        conn.execute("update jobs set run_after = run_after - interval '60 seconds'")
        late, late_strict = health(url)
    assert within["stale"] is False and within_strict == 200 and "stale_reason" not in within
    assert late["stale"] is True and late_strict == 503
    assert "CRONTICK_WAKEUP_GRACE_SECONDS (300 s)" in late["stale_reason"]
    since = datetime.fromisoformat(late["wakeups"]["due_waiting_since"])
    assert since.isoformat() in late["stale_reason"]


def test_a_running_job_whose_lease_ended_past_the_grace_is_stale(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """A tick killed mid-run booked nothing, and its job's rescue falls due when the lease ends: health says so."""
    with waking(live_app, database_url) as (url, _):
        assert httpx.post(url + TICK, headers=AUTH).status_code == 200
        conn.execute(
            "insert into jobs (type, payload, status, attempts, started_at, locked_until) values"
            " (%s, '{}', 'running', 1, now() - interval '20 minutes', now() - make_interval(secs => %s))",
            (noop_jobs.NOOP, GRACE - 30),
        )
        leased, leased_strict = health(url)
        conn.execute("update jobs set locked_until = locked_until - interval '60 seconds'")
        ended, ended_strict = health(url)
        lease_end = conn.execute("select locked_until from jobs").fetchone()[0]  # type: ignore[index]
    assert leased["stale"] is False and leased_strict == 200
    assert ended["stale"] is True and ended_strict == 503
    assert datetime.fromisoformat(ended["wakeups"]["due_waiting_since"]) == lease_end


def test_work_held_back_is_not_due(live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]) -> None:
    with waking(live_app, database_url) as (url, _):
        assert httpx.post(url + TICK, headers=AUTH).status_code == 200
        overdue(conn, "t_health_wakeups.job", 3600)  # its type paused
        conn.execute("insert into crontick_pauses (kind, name) values ('type', 't_health_wakeups.job')")
        overdue(conn, noop_jobs.NOOP, 3600, group_key="paused-group")
        conn.execute("insert into crontick_pauses (kind, name) values ('group', 'paused-group')")
        overdue(conn, "t_flow.limited", 3600)  # names a rate limit: its window decides when it starts
        conn.execute(  # snoozed, retried with backoff: a later run_after
            "insert into jobs (type, payload, run_after, attempts) values (%s, '{}', now() + interval '1 hour', 1)",
            (noop_jobs.NOOP,),
        )
        held, held_strict = health(url)
        conn.execute("delete from crontick_pauses where kind = 'type'")
        freed, freed_strict = health(url)
    assert held["stale"] is False and held_strict == 200 and held["wakeups"]["due_waiting_since"] is None
    assert freed["stale"] is True and freed_strict == 503


def test_health_shows_the_next_booked_wakeup_and_the_last_failure(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with waking(live_app, database_url) as (url, stand_in):
        assert httpx.get(url + HEALTH).json()["wakeups"] == {
            "next_booked_at": None, "last_failed_at": None, "failed_last_day": 0, "due_waiting_since": None,
        }  # fmt: skip
        conn.execute("insert into jobs (type, payload, run_after) values (%s, '{}', now() + interval '1 hour')",
                     (noop_jobs.NOOP,))  # fmt: skip
        stand_in.fail_next.append(503)
        assert httpx.post(url + TICK, headers=AUTH).json()["wakeups"]["failed"] == 1
        failed, _ = health(url)
        assert httpx.post(url + TICK, headers=AUTH).json()["wakeups"]["booked"] == 1
        booked, _ = health(url)
    (instant,) = conn.execute("select instant from crontick_wakeups").fetchone()
    assert failed["wakeups"]["next_booked_at"] is None and failed["wakeups"]["failed_last_day"] == 1
    assert failed["wakeups"]["last_failed_at"] is not None and "stand-in" not in str(failed)  # the text: admin
    assert datetime.fromisoformat(booked["wakeups"]["next_booked_at"]) == instant
    assert booked["wakeups"]["last_failed_at"] == failed["wakeups"]["last_failed_at"]
    assert booked["stale"] is False


def test_without_a_waker_health_is_as_before(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with live_app(settings_for(database_url)) as url:
        assert httpx.post(url + TICK, headers=AUTH).status_code == 200
        overdue(conn, noop_jobs.NOOP, 3600)
        body, strict = health(url)
    assert set(body) == {"ok", "last_tick_at", "stale"} and body["stale"] is False and strict == 200


def test_a_booking_accepted_but_never_delivered_goes_stale_and_the_next_tick_books_again(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """The provider says yes and never calls: health is stale once the work has waited past the grace, with the
    reason, and the next call (the safety net) runs the work and books what comes after."""
    with waking(live_app, database_url) as (url, stand_in):
        stand_in.hold = True
        conn.execute("insert into jobs (type, payload, run_after) values (%s, '{}', now() + interval '90 seconds')",
                     (noop_jobs.NOOP,))  # fmt: skip
        assert httpx.post(url + TICK, headers=AUTH).json()["wakeups"] == {"booked": 1, "failed": 0}
        # Time passes with no delivery: the job, the booking and the tick move back past the grace.
        for table, column in (("jobs", "run_after"), ("crontick_ticks", "started_at"), ("crontick_wakeups", "instant")):
            conn.execute(f"update {table} set {column} = {column} - interval '{GRACE + 200} seconds'")  # noqa: S608
        stale, stale_strict = health(url)
        conn.execute("insert into jobs (type, payload, run_after) values (%s, '{}', now() + interval '1 hour')",
                     (noop_jobs.NOOP,))  # fmt: skip
        net = httpx.post(url + TICK, headers=AUTH).json()  # the daily safety net
        after, _ = health(url)
    assert stale["stale"] is True and stale_strict == 503 and "CRONTICK_WAKEUP_GRACE_SECONDS" in stale["stale_reason"]
    assert net["jobs"]["succeeded"] == 1 and net["wakeups"] == {"booked": 1, "failed": 0}
    assert len(stand_in.published) == 2 and not any(d.delivered_at for d in stand_in.deliveries)
    assert after["stale"] is False and after["wakeups"]["next_booked_at"] is not None
