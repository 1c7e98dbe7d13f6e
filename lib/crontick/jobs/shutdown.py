"""The process is exiting: from then on no job starts, so what a tick claimed and has not started goes back unspent.

Set once, by crontick.hooks.kick when the interpreter begins to exit with a kick thread still running (a script or a
management command that called crontick.kick() and returned). The runner (crontick.jobs.runner) starts no job after
it, and releases the rest of its batch (pending, the attempt not counted); the tick (crontick.tick.pipeline) waits
for no follow-up, and the kick runs no further round. Never cleared: an exiting process does not start again.
"""

from __future__ import annotations

import asyncio
import threading

# How often a wait for a follow-up tick looks whether the process began to exit.
POLL_SECONDS = 0.1

_exiting = threading.Event()


def begin() -> None:
    """The process is exiting: no job starts from now on."""
    _exiting.set()


def begun() -> bool:
    """Whether the process is exiting (then no job may start)."""
    return _exiting.is_set()


async def sleep(seconds: float) -> bool:
    """Sleep `seconds`, or less once the process begins to exit; True when the whole time passed."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not _exiting.is_set():
        left = end - loop.time()
        if left <= 0:
            return True
        await asyncio.sleep(min(POLL_SECONDS, left))
    return False
