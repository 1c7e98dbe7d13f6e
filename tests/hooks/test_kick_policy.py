"""The kick's policy without a server: the mode per host, and coalescing of concurrent kicks."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from crontick.errors import ConfigError
from crontick.hooks.kick import Coalescer, _coalesced, coalescer
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.logs import LogLines

BASE = {"DATABASE_URL": "postgresql://u@h/db", "CRON_SECRET": TEST_SECRET}


@pytest.mark.parametrize(
    ("env", "mode"),
    [
        ({}, "inline"),
        ({"VERCEL": "1"}, "inline"),
        ({"AWS_LAMBDA_FUNCTION_NAME": "fn"}, "http"),
        ({"AWS_LAMBDA_FUNCTION_NAME": "fn", "CRONTICK_KICK": "off"}, "off"),
        ({"CRONTICK_KICK": "HTTP", "CRONTICK_PUBLIC_URL": "https://app.example.com"}, "http"),
    ],
)
def test_mode_per_host(env: dict[str, str], mode: str) -> None:
    assert Settings.from_env({**BASE, **env}).kick == mode


def test_bad_modes_fail_fast_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="CRONTICK_KICK: expected one of off, inline, http"):
        Settings.from_env({**BASE, "CRONTICK_KICK": "soon"})
    with pytest.raises(ConfigError, match="CRONTICK_KICK: .*CRONTICK_PUBLIC_URL"):
        Settings.from_env({**BASE, "CRONTICK_KICK": "http"})


def test_kicks_that_arrive_during_a_tick_become_one_more_tick() -> None:
    rounds: list[int] = []

    async def one_round() -> bool:
        rounds.append(1)
        await asyncio.sleep(0.05)
        return False

    async def burst() -> None:
        first = asyncio.create_task(_coalesced(one_round, "test"))
        await asyncio.sleep(0.01)
        await asyncio.gather(*(_coalesced(one_round, "test") for _ in range(500)))  # all return at once
        assert len(rounds) == 1
        await first

    asyncio.run(burst())
    assert len(rounds) == 2 and not coalescer.running


def test_a_failing_round_is_logged_and_the_next_kick_runs(crontick_log: LogLines) -> None:  # noqa: F811
    calls: list[str] = []

    async def broken() -> bool:
        calls.append("broken")
        raise ConnectionRefusedError("tick URL down")

    async def fine() -> bool:
        calls.append("fine")
        return False

    asyncio.run(_coalesced(broken, "http"))
    asyncio.run(_coalesced(fine, "http"))
    assert calls == ["broken", "fine"]
    assert any('"event": "kick_failed"' in line and "tick URL down" in line for line in crontick_log.lines)


def test_coalescer_states() -> None:
    c = Coalescer()
    assert c.begin() and not c.begin() and c.running  # the second kick is folded into the first
    assert c.again() and not c.again() and not c.running


def test_a_full_batch_chains_at_once_but_stops_at_the_bound(monkeypatch: Any) -> None:

    from crontick.hooks import kick as _  # noqa: F401

    module = sys.modules["crontick.hooks.kick"]
    monkeypatch.setattr(module, "MAX_TICKS_PER_KICK", 5)
    rounds: list[int] = []

    async def backlog() -> bool:
        rounds.append(1)
        return True  # every tick claimed a full batch

    asyncio.run(_coalesced(backlog, "inline"))
    assert len(rounds) == 5 and not coalescer.running


def test_kick_never_raises_into_the_caller_when_crontick_is_misconfigured(
    monkeypatch: pytest.MonkeyPatch,
    crontick_log: LogLines,  # noqa: F811
) -> None:
    import crontick
    from crontick.hooks.kick import attach

    monkeypatch.setenv("CRON_SECRET", "too-short")
    attach(None)
    try:
        crontick.kick()  # e.g. from a Django on_commit: an exception here would fail the committed request
        asyncio.run(crontick.kick_async())
    finally:
        attach(None)
    assert sum('"event": "kick_failed"' in line and "CRON_SECRET" in line for line in crontick_log.lines) == 2
