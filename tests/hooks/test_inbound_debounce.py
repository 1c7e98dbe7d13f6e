"""A hook's jobs debounced per sender and grouped per conversation: a chatty WhatsApp burst becomes one reply job."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.errors import ConfigError
from crontick.hooks.inbound import forget
from crontick.text import KEY_MAX_BYTES, fit_key
from tests.support.hooks import TWILIO_TOKEN, settings_for, twilio_form, twilio_post
from tests.support.http_checks import LiveApp
from tests.support.keys import widest_key
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
crontick.inbound("t-chat-group", "t_hookq.reply", verify="twilio", secret=TWILIO_TOKEN, group_key="conv:{From}")
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


def test_a_sender_field_too_long_for_a_key_still_debounces_and_groups_by_a_stable_digest(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    # Two senders of 1,000 characters (4 bytes each, which do not compress) that differ in their last one only.
    long_ada = widest_key(1000, prefix="whatsapp:+31")
    long_bob = long_ada[:-1] + ("a" if long_ada[-1] != "a" else "b")
    sent = [("SMla0", long_ada, "t-chat"), ("SMla1", long_ada, "t-chat"), ("SMlb0", long_bob, "t-chat")]
    sent += [("SMlg0", long_ada, "t-chat-group"), ("SMlg1", long_ada, "t-chat-group")]
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        for sid, sender, hook in sent:
            response = twilio_post(client, base, _message(sid, sender, sid), hook=hook)
            assert (response.status_code, response.text) == (200, "<Response></Response>")
    rows = conn.execute("select id, group_key, debounce_key, payloads from jobs order by id").fetchall()
    # Its first 1,974 bytes (cut between characters), then "…sha256:" and the digest: at most 2,048 bytes.
    ada, bob = fit_key(long_ada), fit_key(long_bob)
    prefix = long_ada[:12] + long_ada[12 : 12 + (1974 - 12) // 4]  # "whatsapp:+31", then 4-byte characters
    assert ada == prefix + "…sha256:" + hashlib.sha256(long_ada.encode()).hexdigest()
    assert ada != bob and len(ada.encode()) <= KEY_MAX_BYTES and len(bob.encode()) <= KEY_MAX_BYTES
    ada_group, bob_group = fit_key(f"conv:{long_ada}"), fit_key(f"conv:{long_bob}")
    assert [(r[1], r[2], len(r[3] or [None])) for r in rows] == [
        (ada_group, ada, 2),  # both of Ada's messages, merged into one job
        (bob_group, bob, 1),
        (ada_group, None, 1),  # the group-only hook: two jobs in Ada's one group
        (ada_group, None, 1),
    ]
    events = dict(conn.execute("select event_id, job_id from crontick_inbound_events").fetchall())
    assert events == {
        "SMla0": rows[0][0],
        "SMla1": rows[0][0],
        "SMlb0": rows[1][0],
        "SMlg0": rows[2][0],
        "SMlg1": rows[3][0],
    }


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
