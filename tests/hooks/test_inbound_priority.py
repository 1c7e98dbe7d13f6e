"""A hook's job gets its handler's `priority=` on every path: with an event id or without, with flow control or not."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg

import crontick
from tests.support.hooks import BEARER_SECRET, TWILIO_TOKEN, settings_for, twilio_form, twilio_post
from tests.support.http_checks import LiveApp

crontick.inbound("t-prio", "t_hookprio.urgent", verify="twilio", secret=TWILIO_TOKEN)
crontick.inbound("t-prio-bearer", "t_hookprio.urgent", verify="bearer", secret=BEARER_SECRET)
crontick.inbound("t-prio-group", "t_hookprio.urgent", verify="twilio", secret=TWILIO_TOKEN, group_key="conv:{From}")
crontick.inbound(
    "t-prio-debounce",
    "t_hookprio.urgent",
    verify="twilio",
    secret=TWILIO_TOKEN,
    debounce=crontick.Debounce("{From}", 30),
)
crontick.inbound("t-prio-plain", "t_hookprio.plain", verify="twilio", secret=TWILIO_TOKEN, group_key="conv:{From}")


@crontick.handler("t_hookprio.urgent", priority=-10)
def urgent(payload: Any, job: crontick.Job) -> None:
    pass


@crontick.handler("t_hookprio.plain")
def plain(payload: Any, job: crontick.Job) -> None:
    pass


def _priorities(conn: psycopg.Connection[Any]) -> dict[str, list[int]]:
    rows = conn.execute(
        "select coalesce(e.hook, 'no event'), j.priority from jobs j"
        " left join crontick_inbound_events e on e.job_id = j.id order by j.id"
    ).fetchall()
    found: dict[str, list[int]] = {}
    for hook, priority in rows:
        found.setdefault(hook, []).append(priority)
    return found


def test_a_hook_event_with_an_id_gets_its_handlers_priority_as_one_without_does(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        assert twilio_post(client, base, twilio_form("SMprio0"), hook="t-prio").status_code == 200
        bearer = {"Authorization": f"Bearer {BEARER_SECRET}"}
        assert client.post(base + "/api/hooks/t-prio-bearer", json={"n": 1}, headers=bearer).status_code == 200
    # The Twilio event has its MessageSid (the plain statement); the bearer one has no id (crontick.enqueue).
    assert _priorities(conn) == {"t-prio": [-10], "no event": [-10]}


def test_a_hook_event_with_flow_control_gets_its_handlers_priority(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        for n, hook in enumerate(("t-prio-group", "t-prio-debounce", "t-prio-debounce", "t-prio-plain")):
            assert twilio_post(client, base, twilio_form(f"SMflow{n}"), hook=hook).status_code == 200
    # The debounced pair merged into one job; a handler that declares no priority gives 0.
    assert _priorities(conn) == {"t-prio-group": [-10], "t-prio-debounce": [-10, -10], "t-prio-plain": [0]}
    assert conn.execute("select count(*) from jobs where debounce_key is not null").fetchone() == (1,)


def test_the_record_function_takes_the_priority_and_keeps_the_previous_releases_ten_argument_call(
    conn: psycopg.Connection[Any],
) -> None:
    """Code of the previous release calls the 10 arguments during a rolling deploy: its jobs get 0, as they did."""
    args = {"hook": "t-prio-group", "type": "t_hookprio.urgent", "payload": '{"event": {}}', "max": None}
    record = (
        "select job_id, new from crontick_inbound_event_record(%(hook)s, %(event_id)s, null, now(), %(type)s,"
        " %(payload)s::jsonb, %(group)s, %(debounce)s, %(seconds)s, %(max)s{priority})"
    )
    new_call, old_call = record.format(priority=", %(priority)s"), record.format(priority="")
    grouped = {**args, "group": "conv:a", "debounce": None, "seconds": None}
    [(new_id, new)] = conn.execute(new_call, {**grouped, "event_id": "SMnew0", "priority": -10}).fetchall()
    [(old_id, old)] = conn.execute(old_call, {**grouped, "event_id": "SMold0"}).fetchall()
    assert new is old is True
    assert conn.execute(old_call, {**grouped, "event_id": "SMold0"}).fetchall() == [(old_id, False)]  # a redelivery
    debounced = {**args, "group": None, "debounce": "k", "seconds": 30}
    merged = [conn.execute(old_call, {**debounced, "event_id": f"SMold{n}"}).fetchall() for n in (1, 2)]
    merged_id = merged[0][0][0]
    assert merged == [[(merged_id, True)], [(merged_id, True)]]  # two new events, one job
    jobs = conn.execute("select id, group_key, debounce_key, priority from jobs order by id").fetchall()
    assert jobs == [(new_id, "conv:a", None, -10), (old_id, "conv:a", None, 0), (merged_id, None, "k", 0)]
    events = conn.execute("select event_id, job_id from crontick_inbound_events order by event_id").fetchall()
    assert events == [("SMnew0", new_id), ("SMold0", old_id), ("SMold1", merged_id), ("SMold2", merged_id)]
