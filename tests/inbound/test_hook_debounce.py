"""A hook's jobs debounced per sender and grouped per conversation: a chatty WhatsApp burst becomes one reply job."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.errors import ConfigError
from crontick.hooks.inbound import forget
from tests.support.hooks import TWILIO_TOKEN, settings_for, twilio_form, twilio_post
from tests.support.http_checks import LiveApp
from tests.support.waiting import wait_until

ADA, BOB = "whatsapp:+31612345678", "whatsapp:+447700900123"
runs: list[tuple[int, list[str], float]] = []
_lock = threading.Lock()

crontick.inbound(
    "t-chat",
    "t_hookq.reply",
    verify="twilio",
    secret=TWILIO_TOKEN,
    debounce=crontick.Debounce("{From}", 1, max_seconds=5),
    group_key="conv:{From}",
)
crontick.inbound(
    "t-chat-fn",
    "t_hookq.reply",
    verify="twilio",
    secret=TWILIO_TOKEN,
    debounce=lambda event: crontick.Debounce(f"fn:{event['From']}", 30) if event.get("Body") != "urgent" else None,
)


@crontick.handler("t_hookq.reply")
def reply(payload: Any, job: crontick.Job) -> None:
    with _lock:
        runs.append((job.id, [p["event"]["Body"] for p in job.payloads], time.monotonic()))


def _message(sid: str, sender: str, body: str) -> dict[str, str]:
    return {**twilio_form(sid, body), "From": sender}


def test_a_burst_from_one_sender_is_one_job_run_by_the_kick_of_its_last_message(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    runs.clear()
    with live_app(settings_for(database_url, kick="inline")) as base, httpx.Client() as client:
        for n, body in enumerate(("hi", "can I", "book at 3?")):
            last = time.monotonic()  # the sender's last message: its reply is due a second after it
            assert twilio_post(client, base, _message(f"SMada{n}", ADA, body), hook="t-chat").status_code == 200
        redelivered = twilio_post(client, base, _message("SMada1", ADA, "can I"), hook="t-chat")
        assert redelivered.status_code == 200
        assert twilio_post(client, base, _message("SMbob0", BOB, "hello"), hook="t-chat").status_code == 200
        wait_until(lambda: len(runs) == 2, timeout=10)
    by_body = {tuple(bodies): ran_at for _, bodies, ran_at in runs}
    assert set(by_body) == {("hi", "can I", "book at 3?"), ("hello",)}
    assert 0.8 <= by_body[("hi", "can I", "book at 3?")] - last <= 3.5
    rows = conn.execute("select group_key, debounce_key, status from jobs order by id").fetchall()
    assert rows == [(f"conv:{ADA}", ADA, "done"), (f"conv:{BOB}", BOB, "done")]
    # Every event points at the job it merged into; the redelivery added nothing.
    events = conn.execute("select event_id, job_id from crontick_inbound_events order by event_id").fetchall()
    ada_job = conn.execute("select id from jobs where debounce_key = %s", (ADA,)).fetchone()[0]  # type: ignore[index]
    assert [e for e in events if e[0].startswith("SMada")] == [(f"SMada{n}", ada_job) for n in range(3)]
    sources = {r[0] for r in conn.execute("select source from crontick_ticks").fetchall()}
    assert sources == {"kick"}  # no scheduler tick: the kicks ran it


def test_a_function_chooses_each_events_debounce(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        for n, body in enumerate(("a", "b", "urgent")):
            assert twilio_post(client, base, _message(f"SMfn{n}", ADA, body), hook="t-chat-fn").status_code == 200
    rows = conn.execute("select debounce_key, payloads is not null from jobs order by id").fetchall()
    assert rows == [(f"fn:{ADA}", True), (None, False)]


def test_an_event_without_the_templates_field_is_enqueued_without_a_debounce(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    form = {k: v for k, v in _message("SMnofrom", ADA, "x").items() if k != "From"}
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        assert twilio_post(client, base, form, hook="t-chat").status_code == 200
    assert conn.execute("select group_key, debounce_key from jobs").fetchall() == [(None, None)]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"debounce": crontick.Debounce("{From.x}", 1)}, "expected {fields} that name an event's top-level field"),
        ({"debounce": ("{From}", 1)}, "expected debounce as a crontick.Debounce or a function of the event"),
        ({"group_key": ""}, "expected group_key as a non-empty template"),
        ({"group_key": "conv:{From!r}"}, "expected {fields} that name an event's top-level field"),
        ({"group_key": 5}, "expected group_key as a template or a function of the event"),
    ],
)
def test_hook_flow_options_are_checked_when_declared(options: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match="^crontick.inbound\\('t-chat-bad'\\)") as info:
        crontick.inbound("t-chat-bad", "t_hookq.reply", verify="twilio", secret=TWILIO_TOKEN, **options)
    assert expected in str(info.value)
    forget("t-chat-bad")
