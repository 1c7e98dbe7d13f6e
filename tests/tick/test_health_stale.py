"""The dead man's switch over real HTTP: /api/health goes stale and back; strict=1 answers 503, then 200."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest

from crontick.errors import ConfigError
from crontick.settings import Settings
from tests.support.core_jobs import settings_for
from tests.support.http_checks import AUTH, HEALTH, TICK, LiveApp


def ticks_moved_back(conn: psycopg.Connection[Any], seconds: float) -> None:
    """Fake time: every tick so far finished `seconds` earlier (nothing sleeps)."""
    conn.execute(
        "update crontick_ticks set started_at = started_at - make_interval(secs => %(s)s),"
        " finished_at = finished_at - make_interval(secs => %(s)s)",
        {"s": seconds},
    )


def health(url: str) -> tuple[httpx.Response, httpx.Response]:
    return httpx.get(url + HEALTH), httpx.get(url + HEALTH, params={"strict": "1"})


def test_health_goes_stale_and_back_and_strict_answers_503_while_stale(
    live_app: LiveApp, database_url: str, conn: psycopg.Connection[Any]
) -> None:
    with live_app(settings_for(database_url, expected_interval_seconds=600)) as url:
        never_plain, never_strict = health(url)  # no tick has ever run: stale
        assert httpx.post(url + TICK, headers=AUTH).status_code == 200
        fresh_plain, fresh_strict = health(url)
        ticks_moved_back(conn, 2 * 600 - 60)  # nearly two intervals: still fresh
        edge_plain, edge_strict = health(url)
        ticks_moved_back(conn, 120)  # now past 2 x 600 s
        stale_plain, stale_strict = health(url)
        assert httpx.post(url + TICK, headers=AUTH).status_code == 200  # the scheduler comes back
        back_plain, back_strict = health(url)
    assert never_plain.status_code == 200 and never_plain.json() == {"ok": True, "last_tick_at": None, "stale": True}
    assert never_strict.status_code == 503 and never_strict.json() == never_plain.json()
    assert fresh_plain.json()["stale"] is False and fresh_strict.status_code == 200
    assert edge_plain.json()["stale"] is False and edge_strict.status_code == 200
    assert stale_plain.status_code == 200 and stale_plain.json()["stale"] is True
    assert stale_strict.status_code == 503 and stale_strict.json() == stale_plain.json()
    assert stale_strict.headers["content-type"] == "application/json"
    last = datetime.fromisoformat(stale_plain.json()["last_tick_at"])
    assert datetime.fromisoformat(fresh_plain.json()["last_tick_at"]) - last == timedelta(seconds=2 * 600 + 60)
    assert back_plain.json()["stale"] is False and back_strict.status_code == 200
    assert datetime.fromisoformat(back_strict.json()["last_tick_at"]) > last


def test_strict_takes_only_a_yes(live_app: LiveApp, database_url: str) -> None:
    with live_app(settings_for(database_url)) as url:  # no tick yet: stale
        answers = {v: httpx.get(url + HEALTH, params={"strict": v}).status_code for v in ("1", "true", "0", "no", "")}
    assert answers == {"1": 503, "true": 503, "0": 200, "no": 200, "": 200}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CRONTICK_EXPECTED_INTERVAL_SECONDS": "fifteen"}, "CRONTICK_EXPECTED_INTERVAL_SECONDS: expected a number"),
        ({"CRONTICK_EXPECTED_INTERVAL_SECONDS": "5"}, "CRONTICK_EXPECTED_INTERVAL_SECONDS: expected at least 60"),
        ({"CRONTICK_KEEP_DONE_DAYS": "-1"}, "CRONTICK_KEEP_DONE_DAYS: expected at least 0"),
        ({"CRONTICK_KEEP_FAILED_DAYS": "a month"}, "CRONTICK_KEEP_FAILED_DAYS: expected a number"),
        ({"CRONTICK_ALERT_WEBHOOK_URL": "hooks.slack.com/services/T/B/secret"}, "CRONTICK_ALERT_WEBHOOK_URL: expected"),
        ({"CRONTICK_ALERT_WEBHOOK_SECRET": "whsec_not base64!"}, "CRONTICK_ALERT_WEBHOOK_SECRET: expected whsec_"),
    ],
)
def test_bad_monitoring_settings_fail_fast_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env)
    assert str(raised.value).startswith(message)
    assert "T/B/secret" not in str(raised.value)  # a webhook URL's path is its secret: never echoed


def test_monitoring_settings_defaults_and_values() -> None:
    default = Settings.from_env({})
    assert (default.expected_interval_seconds, default.keep_done_days, default.keep_failed_days) == (900, 7, 30)
    assert default.alert_webhook_url is None
    url = "https://hooks.slack.com/services/T000/B000/XXXXXXXX"
    s = Settings.from_env(
        {
            "CRONTICK_EXPECTED_INTERVAL_SECONDS": "300",
            "CRONTICK_ALERT_WEBHOOK_URL": url,
            "CRONTICK_KEEP_DONE_DAYS": "1.5",
        }
    )
    assert (s.expected_interval_seconds, s.alert_webhook_url, s.keep_done_days) == (300, url, 1.5)
    assert url in s.secrets and url not in repr(s)  # scrubbed from errors, never printed
