"""An inbound hook's `start_by_seconds=`: each event's job must start within that many seconds of its arrival, on
every path (the plain record, the flow-controlled one, a bearer event with no id); one not started by then ends
`cancelled` "expired: ..." and never runs. Without it, no deadline. Bad values are a ConfigError at declaration."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
import pytest

import crontick
from crontick.errors import ConfigError
from tests.support.core_jobs import job_row, tick
from tests.support.hooks import BEARER_SECRET, TWILIO_TOKEN, settings_for, twilio_form, twilio_post
from tests.support.http_checks import LiveApp

crontick.inbound("t-startby", "t_hookby.reply", verify="twilio", secret=TWILIO_TOKEN, start_by_seconds=600)
crontick.inbound(
    "t-startby-group",
    "t_hookby.reply",
    verify="twilio",
    secret=TWILIO_TOKEN,
    group_key="c:{From}",
    start_by_seconds=600,
)
crontick.inbound("t-startby-bearer", "t_hookby.reply", verify="bearer", secret=BEARER_SECRET, start_by_seconds=600)
crontick.inbound("t-startby-none", "t_hookby.reply", verify="twilio", secret=TWILIO_TOKEN)

replied: list[str] = []


@crontick.handler("t_hookby.reply")
def reply(payload: Any, job: crontick.Job) -> None:
    replied.append(payload["hook"])


def _deadlines(conn: psycopg.Connection[Any]) -> dict[str, list[float | None]]:
    """Per hook, each job's start_by in seconds after its creation (None: no deadline)."""
    rows = conn.execute(
        "select coalesce(e.hook, 'no event'), extract(epoch from j.start_by - j.created_at)::float8 from jobs j"
        " left join crontick_inbound_events e on e.job_id = j.id where j.type = 't_hookby.reply' order by j.id"
    ).fetchall()
    found: dict[str, list[float | None]] = {}
    for hook, seconds in rows:
        found.setdefault(hook, []).append(None if seconds is None else round(seconds))
    return found


def test_a_hooks_jobs_must_start_within_its_seconds_on_every_path_and_expire_unrun_after(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    replied.clear()
    with live_app(settings_for(database_url, kick="off")) as base, httpx.Client() as client:
        for n, hook in enumerate(("t-startby", "t-startby-group", "t-startby-none")):
            assert twilio_post(client, base, twilio_form(f"SMby{n}"), hook=hook).status_code == 200
        bearer = {"Authorization": f"Bearer {BEARER_SECRET}"}
        assert client.post(base + "/api/hooks/t-startby-bearer", json={"n": 1}, headers=bearer).status_code == 200
    assert _deadlines(conn) == {
        "t-startby": [600],
        "t-startby-group": [600],
        "t-startby-none": [None],
        "no event": [600],
    }
    # Eleven minutes pass with no tick (the host was down): every job with a deadline is past it.
    conn.execute(
        "update jobs set start_by = start_by - interval '11 minutes', run_after = run_after - interval '11 minutes'"
        " where type = 't_hookby.reply'"
    )
    tick(database_url)
    assert replied == ["t-startby-none"]  # only the job without a deadline ran
    ids = [r[0] for r in conn.execute("select id from jobs where type = 't_hookby.reply' and start_by is not null")]
    assert len(ids) == 3
    for job_id in ids:
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"]) == ("cancelled", 0)
        assert row["last_error"].startswith("expired: not started by its start_by (")
    assert conn.execute("select count(*) from crontick_alerts").fetchone() == (0,)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"start_by_seconds": 0}, r"start_by_seconds: expected start_by as .* seconds from now \(above 0"),
        ({"start_by_seconds": "600"}, r"start_by_seconds: expected start_by as"),
        ({"start_by_seconds": datetime(2030, 1, 1, tzinfo=UTC)}, r"expected start_by_seconds as seconds from each"),
        (
            {"start_by_seconds": 60, "job_type": None, "signal": "sms:{MessageSid}"},
            r"expected a job type with start_by_seconds=, got none",
        ),
    ],
)
def test_a_bad_start_by_seconds_is_a_config_error(options: dict[str, Any], expected: str) -> None:
    arguments: dict[str, Any] = {"job_type": "t_hookby.reply", **options}
    with pytest.raises(ConfigError, match=r"crontick.inbound\('t-startby-bad'\): " + expected):
        crontick.inbound("t-startby-bad", verify="twilio", secret=TWILIO_TOKEN, **arguments)
