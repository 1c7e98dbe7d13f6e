"""`crontick.kick()` from sync code: one thread per kick, and only the live ones are remembered."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

import crontick
from crontick.hooks import kick
from crontick.runtime import Runtime
from tests.support.hooks import settings_for


def _kick_threads_alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "crontick-kick"]


def test_finished_kick_threads_are_not_kept(database_url: str, conn: psycopg.Connection[Any]) -> None:
    kick.attach(Runtime(settings_for(database_url, kick="inline")))
    try:
        for _ in range(30):  # each kick after the last one ended: a thread each, each running a real tick
            crontick.kick()
            deadline = time.monotonic() + 10
            while _kick_threads_alive():
                assert time.monotonic() < deadline, "a kick thread did not end"
                time.sleep(0.01)
        kept = len(kick._threads)
        # A kick thread still running is remembered, so wait_for_threads can join it.
        crontick.kick()
        running = len(kick._threads)
        kick.wait_for_threads()
    finally:
        kick.attach(None)
    assert kept == 0, f"{kept} finished threads kept"
    assert running <= 1 and len(kick._threads) == 0
    ticks = conn.execute("select count(*) from crontick_ticks where source = 'kick'").fetchone()
    assert ticks == (31,)
