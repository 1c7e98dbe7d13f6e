"""An inbound hook's `max_attempts=` is what its jobs get, on every path; else its handler's; else 4."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.errors import ConfigError
from tests.support.hooks import BEARER_SECRET, TWILIO_TOKEN, settings_for, twilio_form, twilio_post
from tests.support.http_checks import LiveApp

crontick.inbound("t-maxatt", "t_hookmax.job", verify="twilio", secret=TWILIO_TOKEN, max_attempts=2)
crontick.inbound("t-maxatt-bearer", "t_hookmax.job", verify="bearer", secret=BEARER_SECRET, max_attempts=2)
crontick.inbound(
    "t-maxatt-group", "t_hookmax.job", verify="twilio", secret=TWILIO_TOKEN, group_key="conv:{From}", max_attempts=2
)
crontick.inbound("t-maxatt-handler", "t_hookmax.declared", verify="twilio", secret=TWILIO_TOKEN)
crontick.inbound(
    "t-maxatt-handler-debounce",
    "t_hookmax.declared",
    verify="twilio",
    secret=TWILIO_TOKEN,
    debounce=crontick.Debounce("{From}", 30),
)
crontick.inbound("t-maxatt-none", "t_hookmax.job", verify="twilio", secret=TWILIO_TOKEN)


@crontick.handler("t_hookmax.job")
def job(payload: Any, job: crontick.Job) -> None:
    pass


@crontick.handler("t_hookmax.declared", max_attempts=6)
def declared(payload: Any, job: crontick.Job) -> None:
    pass


def _max_attempts(conn: psycopg.Connection[Any]) -> dict[str, list[int]]:
    rows = conn.execute(
        "select coalesce(e.hook, 'no event'), j.max_attempts from jobs j"
        " left join crontick_inbound_events e on e.job_id = j.id order by j.id"
    ).fetchall()
    found: dict[str, list[int]] = {}
    for hook, max_attempts in rows:
        found.setdefault(hook, []).append(max_attempts)
    return found


def test_a_hooks_max_attempts_wins_then_its_handlers_on_every_path(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        hooks = ("t-maxatt", "t-maxatt-group", "t-maxatt-handler", "t-maxatt-handler-debounce", "t-maxatt-none")
        for n, hook in enumerate(hooks):
            assert twilio_post(client, base, twilio_form(f"SMmax{n}"), hook=hook).status_code == 200
        bearer = {"Authorization": f"Bearer {BEARER_SECRET}"}
        assert client.post(base + "/api/hooks/t-maxatt-bearer", json={"n": 1}, headers=bearer).status_code == 200
    assert _max_attempts(conn) == {
        "t-maxatt": [2],
        "t-maxatt-group": [2],
        "t-maxatt-handler": [6],
        "t-maxatt-handler-debounce": [6],
        "t-maxatt-none": [4],
        "no event": [2],
    }


def test_a_hooks_max_attempts_out_of_range_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"crontick.inbound\('t-maxatt-bad'\): expected max_attempts"):
        crontick.inbound("t-maxatt-bad", "t_hookmax.job", verify="twilio", secret=TWILIO_TOKEN, max_attempts=0)
