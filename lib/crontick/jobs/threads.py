"""The threads sync (`def`) handlers run in: a batch's own pool, one thread per worker, kept for the next batch.

Why not the loop's default executor (asyncio.to_thread): it has min(32, CPUs + 4) threads, fewer than a batch's
workers on a small host (6 on 2 CPUs against CRONTICK_CONCURRENCY 10), and whatever else the process runs shares
it. Why kept: starting ten threads costs a batch of quick handlers more than the handlers do. A pool goes back to
be reused only when every run its batch gave it has ended. One a handler may still hold (the budget cut it, and a
thread cannot be stopped) is shut down, its threads ending with their handlers; what waits for them is what waited
for asyncio.to_thread's: the loop's default executor, which asyncio.run (`crontick tick`, a test's tick) waits
for before it returns, so a cut handler's thread is not lost with the process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading

# Idle pools kept for the next batches (several ticks may run at once in one process, each with its own pool).
KEPT_POOLS = 4

_lock = threading.Lock()
_idle: list[tuple[int, int, concurrent.futures.ThreadPoolExecutor]] = []  # (pid, threads, pool)


def take(threads: int) -> concurrent.futures.ThreadPoolExecutor:
    """A pool of at least `threads` threads that no other batch uses until it is given back."""
    pid = os.getpid()
    with _lock:
        for i, (owner, size, pool) in reversed(list(enumerate(_idle))):  # the last given back: its threads are warm
            # A pool made before a fork has no threads in the child: it would take work and never run it.
            if owner == pid and size >= threads:
                del _idle[i]
                return pool
    return concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="crontick-job")


def give_back(pool: concurrent.futures.ThreadPoolExecutor, threads: int, *, idle: bool) -> None:
    """On the loop, when the batch is over: keep `pool` for the next one when `idle` (every run it was given has
    ended), else shut it down once the handlers that still hold its threads end."""
    if not idle:
        asyncio.get_running_loop().run_in_executor(None, pool.shutdown)
        return
    with _lock:
        _idle.append((os.getpid(), threads, pool))
        if len(_idle) <= KEPT_POOLS:
            return
        *_, pool = _idle.pop(0)
    pool.shutdown(wait=False)
