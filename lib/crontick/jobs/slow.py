"""Slow jobs (CRONTICK_SLOW_JOB_SECONDS): each one a batch runs is logged as slow_job the moment it crosses the
threshold, while it still runs, so a job the tick's budget is about to cut warns first; the runner marks its
outcome slow, which the record statement counts per type."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from crontick import logs
from crontick.jobs.job import Job

# The watcher's shortest sleep: with CRONTICK_SLOW_JOB_SECONDS at 0 (every job warns) it must not spin.
MIN_WAKE_SECONDS = 0.01


class SlowWatch:
    """One batch's running jobs, by their index in it, with when each began (the loop's workers and their threads
    write it, watch() reads it, under one lock), and the indexes already logged slow."""

    def __init__(self, after_seconds: float, clock: Callable[[], float]) -> None:
        self.after_seconds, self.clock = after_seconds, clock
        self.running: dict[int, tuple[Job, float]] = {}
        self.slow: set[int] = set()
        self.lock = threading.Lock()

    def started(self, index: int, job: Job, began: float) -> None:
        with self.lock:
            self.running[index] = (job, began)

    def ended(self, index: int) -> tuple[bool, float | None]:
        """The job at `index` has ended: whether it ran the threshold or longer (logged now if watch() had not yet),
        and how long it ran, in ms (None for a job never started), which the record counts in the per-type durations."""
        with self.lock:
            job, began = self.running.pop(index, (None, 0.0))
            if job is None:
                return index in self.slow, None
            ran = self.clock() - began
            if index not in self.slow and ran >= self.after_seconds:
                self._note(index, job, began)
            return index in self.slow, ran * 1000

    async def watch(self) -> None:
        """Until cancelled (the batch's end): sleep until the next running job crosses the threshold, and log it."""
        wait = self.after_seconds
        while True:
            await asyncio.sleep(max(wait, MIN_WAKE_SECONDS))
            with self.lock:
                now, wait = self.clock(), self.after_seconds
                for index, (job, began) in self.running.items():
                    if index in self.slow:
                        continue
                    if now - began >= self.after_seconds:
                        self._note(index, job, began)
                    else:
                        wait = min(wait, began + self.after_seconds - now)

    def _note(self, index: int, job: Job, began: float) -> None:
        """Under `lock`: one warning per job and attempt, naming it (this runs outside the job's own log context)."""
        self.slow.add(index)
        logs.warning(
            "slow_job", job_id=job.id, job_type=job.type, attempt=job.attempt,
            seconds=round(self.clock() - began, 1), slow_job_seconds=self.after_seconds,
        )  # fmt: skip
