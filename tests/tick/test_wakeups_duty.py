"""The wake-ups duty (crontick.tick.wakeups_duty): a tick books its own next call at the instant work comes due.

Over real HTTP: the app under uvicorn, and the QStash stand-in (tests/support/qstash_server.py, Upstash's documented
publish API), which delivers the booking signed at its Not-Before to the app's own tick.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg

from crontick.tick.wakeups_duty import DUTY, WakeupCounts
from crontick.wakers import cloudtasks, ledger
from tests.support import noop_jobs
from tests.support.cloudtasks_front import QUEUE, cloudtasks_front
from tests.support.credentials import QSTASH_CURRENT, OidcIssuer
from tests.support.http_checks import AUTH, TICK
from tests.support.qstash_server import qstash_stand_in
from tests.support.waking import posted_tick
from tests.tick.support import TOKEN, DutyRun, settings_for, waking_app


def enqueue_in(conn: psycopg.Connection[Any], seconds: float) -> int:
    row = conn.execute(
        "insert into jobs (type, payload, run_after) values (%(t)s, '{}', now() + make_interval(secs => %(s)s))"
        " returning id",
        {"t": noop_jobs.NOOP, "s": seconds},
    ).fetchone()
    assert row is not None
    return int(row[0])


def probed(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """The probe's answer as the wake-ups duty reads it: the bookings from now on (sql/functions/tick_probe.sql)."""
    row = conn.execute("select crontick.crontick_wakeup_ledger(now(), %s)", (ledger.ROWS,)).fetchone()
    assert row is not None
    return {"wakeups": {"bookings": row[0]}}


def test_without_a_waker_the_duty_costs_nothing(duty_run: DutyRun) -> None:
    counts, _, statements = duty_run(DUTY, {}, next_due_at=datetime.now(UTC), more=True)
    assert (counts, statements) == (None, [])


def test_with_nothing_pending_it_books_nothing_and_sends_no_statement(duty_run: DutyRun, database_url: str) -> None:
    settings = settings_for(database_url, waker="qstash", qstash_token=TOKEN, public_url="http://127.0.0.1:9")
    counts, _, statements = duty_run(DUTY, {}, settings=settings, next_due_at=None)
    assert (counts, statements) == (WakeupCounts(0, 0), [])


def test_a_booking_adds_one_statement_and_one_call_and_a_repeat_none(
    duty_run: DutyRun, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = settings_for(database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                                public_url="http://127.0.0.1:9")  # fmt: skip
        due = datetime.now(UTC) + timedelta(hours=1)
        first, _, sent_first = duty_run(DUTY, probed(conn), settings=settings, next_due_at=due)
        again, _, sent_again = duty_run(DUTY, probed(conn), settings=settings, next_due_at=due)
        # Without the probe's bookings (a drain's later batches, whose claim took the probe's place): read first.
        unprobed, _, sent_unprobed = duty_run(DUTY, {}, settings=settings, next_due_at=due)
    # The call first, then one statement that records it with QStash's messageId (which its cancel needs).
    assert (first, sent_first) == (WakeupCounts(1, 0), ["wakeup_claim"])
    assert (again, sent_again) == (WakeupCounts(0, 0), [])  # booked already, by the probe's rows: no call
    assert (unprobed, sent_unprobed) == (WakeupCounts(0, 0), ["wakeup_ledger"])
    assert len(stand_in.published) == 1
    row = conn.execute("select status, message_id from crontick.crontick_wakeups").fetchone()
    assert row == ("booked", stand_in.deliveries[0].message_id)


def test_a_tick_books_the_next_due_job_and_the_delivered_wakeup_runs_it(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # A budget shorter than the wait: the tick does not wait for the job itself (crontick.tick.follow_up).
    with waking_app(database_url, time_budget_seconds=0.5) as (url, stand_in):
        job = enqueue_in(conn, 2)
        first = posted_tick(url)
        assert first["jobs"]["claimed"] == 0 and first["wakeups"] == {"booked": 1, "failed": 0}
        (published,) = stand_in.published
        due_at = datetime.fromisoformat(first["next_due_at"])
        assert published["destination"] == f"{url}/api/cron/tick"
        assert int(published["headers"]["upstash-not-before"]) == int(-(-due_at.timestamp() // 1))  # rounded up
        (delivery,) = stand_in.wait_delivered(1, timeout=20)
        assert delivery.statuses == [200]  # signed by the stand-in, accepted by the app's QStash verifier
        assert delivery.delivered_at is not None and delivery.delivered_at >= due_at.timestamp()
        status, updated = conn.execute("select status, updated_at from jobs where id = %s", (job,)).fetchone()
        assert status == "done" and updated >= due_at
        # The delivered tick left nothing pending: it booked nothing more.
        assert len(stand_in.published) == 1
        (instant, booked) = conn.execute("select instant, status from crontick.crontick_wakeups").fetchone()
        assert booked == "booked" and instant.timestamp() == float(published["headers"]["upstash-not-before"])


def test_a_tick_with_nothing_due_books_nothing(database_url: str) -> None:
    with waking_app(database_url) as (url, stand_in):
        body = posted_tick(url)
    assert body["wakeups"] == {"booked": 0, "failed": 0} and body["next_due_at"] is None
    assert stand_in.published == []


def test_concurrent_ticks_book_one_wakeup(database_url: str, conn: psycopg.Connection[Any]) -> None:
    enqueue_in(conn, 3600)
    with waking_app(database_url) as (url, stand_in), ThreadPoolExecutor(6) as pool:
        bodies = list(pool.map(lambda _: posted_tick(url), range(6)))
    assert sum(b["wakeups"]["booked"] for b in bodies) == 1 and not any(b["wakeups"]["failed"] for b in bodies)
    # A tick whose probe ran before the first booking was recorded calls too, under the same key: one message.
    assert 1 <= len(stand_in.published) <= 6 and len(stand_in.deliveries) == 1
    assert conn.execute("select count(*) from crontick.crontick_wakeups").fetchone() == (1,)


def test_a_tick_that_leaves_work_due_books_its_follow_up_at_once(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    noop_jobs.seed(conn, 3)
    with waking_app(database_url, batch_size=1) as (url, stand_in):
        before = time.time()
        body = posted_tick(url)
        assert body["more"] is True and body["wakeups"] == {"booked": 1, "failed": 0}
        (published,) = stand_in.published
        assert int(published["headers"]["upstash-not-before"]) <= before + 3  # now, not a minute later
        stand_in.wait_delivered(1, timeout=20)  # the follow-up: it runs the next job, and books its own
        stand_in.wait_delivered(2, timeout=20)
    assert conn.execute("select count(*) from jobs where status = 'done'").fetchone()[0] >= 2


def test_a_provider_answering_500_leaves_the_tick_200_and_is_counted(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    enqueue_in(conn, 3600)
    with waking_app(database_url) as (url, stand_in):
        stand_in.fail_next.append(500)
        failed = posted_tick(url)  # posted_tick asserts the 200
        again = posted_tick(url)  # the next tick books the same instant again
    assert failed["wakeups"] == {"booked": 0, "failed": 1}
    assert again["wakeups"] == {"booked": 1, "failed": 0}
    assert [json.loads(p["body"])["instant"] for p in stand_in.published][0] == json.loads(
        stand_in.published[1]["body"]
    )["instant"]
    (status, attempts, error) = conn.execute("select status, attempts, error from crontick.crontick_wakeups").fetchone()
    assert (status, attempts) == ("booked", 2) and "500" in error


def test_work_the_request_runs_itself_in_process_is_not_booked(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """A job due within the tick's budget is run by the same request (crontick.tick.follow_up): a booking for it
    would only deliver an empty tick. What comes due after the budget is booked by the last tick."""
    with waking_app(database_url, time_budget_seconds=8) as (url, stand_in):
        soon = enqueue_in(conn, 1.5)
        later = enqueue_in(conn, 3600)
        body = posted_tick(url)
        time.sleep(2)  # a delivery booked for the first job would have come by now
    assert conn.execute("select status from jobs where id = %s", (soon,)).fetchone() == ("done",)
    assert body["jobs"]["succeeded"] == 1 and body["wakeups"] == {"booked": 1, "failed": 0}
    (published,) = stand_in.published  # one booking: the later job's, none for the one run in-process
    assert stand_in.deliveries and not any(d.delivered_at for d in stand_in.deliveries)
    (due,) = conn.execute("select run_after from jobs where id = %s", (later,)).fetchone()
    assert int(published["headers"]["upstash-not-before"]) == int(-(-due.timestamp() // 1))


def test_a_provider_that_does_not_answer_leaves_the_tick_in_time_and_is_counted(
    database_url: str, conn: psycopg.Connection[Any]
) -> None:
    enqueue_in(conn, 3600)
    with waking_app(database_url, wakeup_timeout_seconds=0.3) as (url, stand_in):
        stand_in.stall_seconds = 3.0
        response = httpx.post(url + TICK, headers=AUTH, timeout=2.5)  # the stall would overrun this
    assert response.status_code == 200 and response.json()["wakeups"] == {"booked": 0, "failed": 1}
    (status, error) = conn.execute("select status, error from crontick.crontick_wakeups").fetchone()
    assert status == "failed" and "no answer within 0.3 s" in error


def test_a_delivered_tick_records_its_instant_served_in_the_claims_statement_or_one_of_its_own(
    duty_run: DutyRun, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    """What a delivery adds to the duty: nothing when it books (the claim records it served), one statement when it
    books nothing (nothing pending, or work the request runs itself)."""
    delivered = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    conn.execute("insert into crontick.crontick_wakeups (instant, provider) values (%s, 'qstash')", (delivered,))
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = settings_for(database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                                public_url="http://127.0.0.1:9")  # fmt: skip
        due = datetime.now(UTC) + timedelta(hours=1)
        booked, _, sent_booking = duty_run(DUTY, probed(conn), settings=settings, next_due_at=due,
                                           delivered=delivered)  # fmt: skip
        served = conn.execute("select served_at from crontick.crontick_wakeups where instant = %s", (delivered,))
        conn.execute("update crontick.crontick_wakeups set served_at = null")
        idle, _, sent_idle = duty_run(DUTY, {}, settings=settings, next_due_at=None, delivered=delivered)
        in_process, _, sent_in_process = duty_run(DUTY, {}, settings=settings, next_due_at=due, delivered=delivered,
                                                  follow_up_in=2.0)  # fmt: skip
    assert (booked, sent_booking) == (WakeupCounts(1, 0), ["wakeup_claim"]) and served.fetchone()[0] is not None
    assert (idle, sent_idle) == (WakeupCounts(0, 0), ["wakeup_served"])
    assert (in_process, sent_in_process) == (WakeupCounts(0, 0), ["wakeup_served"])
    assert len(stand_in.published) == 1


def test_a_booking_that_supersedes_one_cancels_it_with_no_statement_of_its_own(
    duty_run: DutyRun, database_url: str, issuer: OidcIssuer, conn: psycopg.Connection[Any]
) -> None:
    """The cancel rides in the booking's one statement, with QStash's messageId or a key-named provider's (Cloud
    Tasks) booking alike, cancelling or not; each cancel is one HTTP call, alongside the booking's."""
    due = datetime.now(UTC) + timedelta(hours=1)
    with qstash_stand_in(TOKEN, QSTASH_CURRENT) as stand_in:
        settings = settings_for(database_url, waker="qstash", qstash_token=TOKEN, qstash_url=stand_in.url,
                                public_url="http://127.0.0.1:9")  # fmt: skip
        _, _, sent_first = duty_run(DUTY, probed(conn), settings=settings, next_due_at=due)
        later, _, sent_later = duty_run(DUTY, probed(conn), settings=settings, next_due_at=due + timedelta(minutes=5))
    assert sent_first == sent_later == ["wakeup_claim"] and later == WakeupCounts(1, 0)
    assert stand_in.cancelled == [stand_in.deliveries[0].message_id] and len(stand_in.published) == 2
    cloudtasks._tokens.clear()
    with cloudtasks_front(issuer) as front:
        project, _, location, _, queue = QUEUE.split("/")[1:]
        settings = settings_for(database_url, waker="cloudtasks", public_url="https://app.example.com",
                                cloudtasks_project=project, cloudtasks_location=location, cloudtasks_queue=queue,
                                cloudtasks_service_account="tasks@octo-project.iam.gserviceaccount.com",
                                cloudtasks_url=front.url, gcp_metadata_url=front.url)  # fmt: skip
        _, _, sent_first = duty_run(DUTY, probed(conn), settings=settings, next_due_at=due + timedelta(minutes=10))
        later, _, sent_later = duty_run(DUTY, probed(conn), settings=settings,
                                        next_due_at=due + timedelta(minutes=15))  # fmt: skip
    assert sent_first == sent_later == ["wakeup_claim"] and later == WakeupCounts(1, 0)
    assert front.deleted == [front.created[0]["name"]] and len(front.created) == 2
