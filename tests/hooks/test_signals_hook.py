"""Inbound hooks that signal: a workflow waiting for a provider's delivery callback is woken by Twilio's signed status
callback over real HTTP, in the transaction that records the event; a redelivery signals nothing; a hook can enqueue
and signal at once."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.errors import ConfigError
from crontick.text import fit_key
from tests.support.core_jobs import job_row, tick
from tests.support.hooks import TWILIO_TOKEN, settings_for, twilio_post
from tests.support.http_checks import LiveApp
from tests.support.keys import widest_key
from tests.support.waiting import wait_until

crontick.inbound(
    "t-sms-status", verify="twilio", secret=TWILIO_TOKEN, signal=lambda event: f"sms:{event['MessageSid']}"
)
crontick.inbound("t-sms-both", "t_hooksig.log", verify="twilio", secret=TWILIO_TOKEN, signal="both:{MessageSid}")
crontick.inbound("t-sms-from", verify="twilio", secret=TWILIO_TOKEN, signal="from:{From}")
delivered: dict[int, Any] = {}
logged: list[int] = []


@crontick.handler("t_hooksig.send")
async def send(payload: Any, job: crontick.Job) -> None:
    await job.step("send", lambda: {"sid": payload["sid"]})
    delivered[job.id] = await job.wait_for("delivered", f"{payload['prefix']}:{payload['sid']}", timeout_seconds=600)


@crontick.handler("t_hooksig.log")
def log(payload: Any, job: crontick.Job) -> None:
    logged.append(job.id)


def _status(sid: str, status: str = "delivered") -> dict[str, str]:
    return {"MessageSid": sid, "MessageStatus": status, "To": "whatsapp:+31612345678"}


def test_a_signed_status_callback_wakes_the_waiting_send_and_its_redelivery_signals_nothing(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    delivered.clear()
    first = crontick.enqueue(conn, "t_hooksig.send", {"sid": "SMs1", "prefix": "sms"})
    second = crontick.enqueue(conn, "t_hooksig.send", {"sid": "SMs1", "prefix": "sms"})
    tick(database_url)
    assert job_row(conn, first)["status"] == job_row(conn, second)["status"] == "waiting"
    with live_app(settings_for(database_url, kick="inline")) as base, httpx.Client() as client:
        assert twilio_post(client, base, _status("SMs1"), hook="t-sms-status").status_code == 200
        wait_until(lambda: job_row(conn, first)["status"] == "done", timeout=10)
        # Twilio redelivers the same callback: recorded once, so the second waiter stays waiting.
        assert twilio_post(client, base, _status("SMs1"), hook="t-sms-status").status_code == 200
        unsigned = client.post(base + "/api/hooks/t-sms-status", data=_status("SMs1"))
        assert unsigned.status_code == 401
    tick(database_url)
    assert job_row(conn, second)["status"] == "waiting"
    got = delivered[first]
    assert set(got) == {"hook", "event_id", "received_at", "event"}  # the payload a job of the hook would get
    assert (got["hook"], got["event_id"], got["event"]["MessageStatus"]) == ("t-sms-status", "SMs1", "delivered")
    events = conn.execute("select event_id, job_id from crontick_inbound_events").fetchall()
    assert events == [("SMs1", first)]  # the event names the job it woke
    assert conn.execute("select count(*) from crontick_signals").fetchone()[0] == 0  # type: ignore[index]
    assert conn.execute("select count(*) from jobs where type <> 't_hooksig.send'").fetchone()[0] == 0  # type: ignore[index]


def test_an_early_callback_is_kept_and_a_hook_can_enqueue_and_signal(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    logged.clear()
    # The job that sent the message exists before its callback (job.wait_for takes no signal older than its job).
    waiter = crontick.enqueue(conn, "t_hooksig.send", {"sid": "SMb1", "prefix": "both"})
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        assert twilio_post(client, base, _status("SMb1"), hook="t-sms-both").status_code == 200
        assert twilio_post(client, base, _status("SMb1"), hook="t-sms-both").status_code == 200
    # The callback came before anyone waited: one job enqueued, one signal kept for the wait.
    kept = conn.execute("select event_key, payload->>'event_id' from crontick_signals").fetchall()
    assert kept == [("both:SMb1", "SMb1")]
    tick(database_url)
    tick(database_url)
    assert job_row(conn, waiter)["status"] == "done"
    assert delivered[waiter]["event"]["MessageSid"] == "SMb1"
    assert len(logged) == 1


def test_a_hook_with_neither_a_job_type_nor_a_signal_is_refused() -> None:
    with pytest.raises(ConfigError, match="expected a job type, a signal= or both, got neither"):
        crontick.inbound("t-sms-none", verify="twilio", secret=TWILIO_TOKEN)
    with pytest.raises(ConfigError, match="signal"):
        crontick.inbound("t-sms-bad", verify="twilio", secret=TWILIO_TOKEN, signal="sms:{Message Sid}")


def test_a_sender_field_too_long_for_an_event_key_signals_its_stable_digest(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    sender = widest_key(1000, prefix="whatsapp:+31")  # 4-byte characters that do not compress
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        for sid in ("SMf1", "SMf2"):
            response = twilio_post(client, base, {**_status(sid), "From": sender}, hook="t-sms-from")
            assert response.status_code == 200, response.text
    kept = conn.execute("select event_key, payload->>'event_id' from crontick_signals order by id").fetchall()
    assert kept == [(fit_key(f"from:{sender}"), "SMf1"), (fit_key(f"from:{sender}"), "SMf2")]


def test_a_long_senders_signal_wakes_the_workflow_waiting_on_the_same_template_key(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # The workflow waits on f"from:{From}" and the hook signals "from:{From}": over the bound, both become the same
    # digest (job.wait_for fits its key as the hook does), so the long sender's callback wakes it.
    delivered.clear()
    sender = widest_key(1000, prefix="whatsapp:+31")  # about 4 kB that do not compress
    waiter = crontick.enqueue(conn, "t_hooksig.send", {"sid": sender, "prefix": "from"})
    tick(database_url)
    assert job_row(conn, waiter)["status"] == "waiting"
    waits = conn.execute("select event_key from job_steps where job_id = %s and status = 'waiting'", (waiter,))
    assert waits.fetchall() == [(fit_key(f"from:{sender}"),)]
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        response = twilio_post(client, base, {**_status("SMw1"), "From": sender}, hook="t-sms-from")
        assert response.status_code == 200, response.text
    assert job_row(conn, waiter)["status"] == "pending"  # woken in the event's transaction
    assert conn.execute("select count(*) from crontick_signals").fetchone() == (0,)  # none kept: it met the wait
    tick(database_url)
    assert job_row(conn, waiter)["status"] == "done"
    assert (delivered[waiter]["event_id"], delivered[waiter]["event"]["From"]) == ("SMw1", sender)
