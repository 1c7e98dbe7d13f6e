"""The Vercel Queues subscriber of CRONTICK_WAKER=vercel-queue: each message on the topic runs one tick in this process.

crontick books its next tick as a delayed message on CRONTICK_VERCEL_QUEUE_TOPIC
(crontick.wakers.vercel_queue); this module is what receives it. Declare it in the app's
`pyproject.toml`, and Vercel's build compiles it into a queue-triggered function (it has no route:
only the queue invokes it, so it needs no secret), with the `vercel-queue` extra installed:

    [[tool.vercel.subscribers]]
    entrypoint = "crontick.vercel_subscriber:run_tick"

The topic is read when the module is imported, because the build imports it to find its
subscription: set CRONTICK_VERCEL_QUEUE_TOPIC for the build too if you change it. The tick is the
one every entry point runs (crontick.runtime.Runtime.run, as crontick.aws runs EventBridge's), on
a Runtime kept for the life of the instance. A message whose tick cannot run (crontick not
configured, the database down) raises, so the queue delivers it again after RETRY_AFTER_SECONDS;
a message that is not crontick's is logged and acknowledged.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from vercel.queue import subscribe

from crontick import logs
from crontick.settings.wakeups import DEFAULT_VERCEL_QUEUE_TOPIC
from crontick.wakers.base import TICK_EVENT

if TYPE_CHECKING:
    from crontick.runtime import Runtime

TOPIC = os.environ.get("CRONTICK_VERCEL_QUEUE_TOPIC") or DEFAULT_VERCEL_QUEUE_TOPIC
# A tick that could not run is delivered again this long after; the safety net covers a message that runs out of attempts.
RETRY_AFTER_SECONDS = 60

# This instance's Runtime (settings and the pooled connection), built from the environment on the first message.
current: Runtime | None = None


def runtime() -> Runtime:
    """This instance's Runtime, built on the first message."""
    global current
    if current is None:
        from crontick.runtime import Runtime

        current = Runtime()
    return current


@subscribe(topic=TOPIC, retry_after=timedelta(seconds=RETRY_AFTER_SECONDS))
async def run_tick(message: Any) -> None:
    """Run one tick for a booked wake-up (`{"crontick": "tick", "instant": …}`); the tick logs its own summary."""
    if not (isinstance(message, dict) and message.get("crontick") == TICK_EVENT["crontick"]):
        shape = (
            f"an object with keys {sorted(map(str, message))[:12]}"
            if isinstance(message, dict)
            else type(message).__name__
        )
        logs.warning("vercel_queue_ignored", topic=TOPIC, detail=f'expected {{"crontick": "tick"}}, got {shape}')
        return
    ticking = runtime()
    ticking.database()  # ConfigError, with the reason, when crontick is not configured: the queue retries
    from crontick.wakers.delivery import delivered_instant

    # The message's instant: a duplicate delivery of one already served is answered without a tick.
    await ticking.run(source="vercel-queue", delivered=delivered_instant(message))
