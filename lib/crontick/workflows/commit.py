"""A batch's group commit: the finished steps of all its jobs, written a statement per round, whichever thread ran them.

Async handlers queue their writes on the loop. A sync (`def`) handler's thread queues its own under a lock and
wakes the loop only when nothing else will: when no round is under way, or when it is the last of the threads the
loop is waiting for. Those are the threads whose writes the last round committed: a quick workflow's thread comes
back with its next step within microseconds, so a round first waits for them (at most GATHER_SECONDS) and then
carries as many steps as the async twin's round would; one that stays away (a slow step, its handler done) is not
waited for again until it writes. A thread wait costs an OS wake-up, so per step a def handler pays one (its write
committed) instead of three (the write queued, the commit, the next round started).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import psycopg

from crontick.db import query
from crontick.errors import StepError

# The longest a round waits for the threads the round before released (their next step's write). Far below a step
# worth recording (a provider call), far above the microseconds a quick def workflow's thread takes between writes.
GATHER_SECONDS = 0.002


class ThreadWaiter:
    """A sync handler's thread waiting for its write's round: a lock the thread blocks on until the loop releases it.

    What concurrent.futures.Future would do for this one waiter, without its Condition (a lock made per wait, a
    waiters list, callbacks): the loop pays one lock release per step it wakes, the thread one acquire."""

    __slots__ = ("_lock", "_value", "_error", "_set")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()  # held until the loop sets the outcome
        self._value = False
        self._error: BaseException | None = None
        self._set = False

    def done(self) -> bool:
        return self._set

    def set_result(self, value: bool) -> None:
        self._value, self._set = value, True
        self._lock.release()

    def set_exception(self, exc: BaseException) -> None:
        self._error, self._set = exc, True
        self._lock.release()

    def result(self) -> bool:
        """In the thread: block until the outcome is set; whether the row was written, or the round's error."""
        self._lock.acquire()
        if self._error is not None:
            raise self._error
        return self._value


# A write's waiter: the loop's future (an async handler) or a lock (a sync handler's thread).
Done = asyncio.Future[bool] | ThreadWaiter


class Write(NamedTuple):
    job_id: int
    attempt: int
    name: str
    text: str  # the step's JSON result
    seconds: float | None  # how long the step's function ran (crontick_step_minutes); None for crontick's own rows
    done: Done  # set to whether the row was written (False: fenced, the job taken over)
    thread: int | None  # the sync handler's thread (threading.get_ident()); None on the loop


class GroupCommit:
    """The writes waiting for the next round on `conn` (the tick's), and the threads that round waits for.

    `written(job_ids)` is told each step committed (one id per step), before its waiter wakes.
    """

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        loop: asyncio.AbstractEventLoop,
        written: Callable[[Iterable[int]], None],
    ) -> None:
        self.conn, self.loop, self.written = conn, loop, written
        self._lock = threading.Lock()  # what the loop and the threads share: the four fields below
        self._queue: list[Write] = []
        self._flushing = False  # a round is under way or about to start: a write needs not wake the loop
        self._due: set[int] = set()  # threads whose write the last round committed, not back since
        self._gathering: asyncio.Future[None] | None = None  # the round waiting for them

    def queue(self, job_id: int, attempt: int, name: str, text: str, seconds: float | None) -> asyncio.Future[bool]:
        """On the loop (an async handler): queue one write; its future says whether it was written."""
        done: asyncio.Future[bool] = self.loop.create_future()
        with self._lock:
            self._queue.append(Write(job_id, attempt, name, text, seconds, done, None))
            start = not self._flushing
            self._flushing = True
        if start:
            self._start()
        return done

    def write_in_thread(self, job_id: int, attempt: int, name: str, text: str, seconds: float | None) -> bool:
        """In a sync handler's thread: queue one write, wait until a round has committed it, say whether it was."""
        done = ThreadWaiter()
        me = threading.get_ident()
        with self._lock:
            self._queue.append(Write(job_id, attempt, name, text, seconds, done, me))
            self._due.discard(me)
            start = not self._flushing
            self._flushing = True
            gathered = self._gathering is not None and not self._due
        if start:
            self.loop.call_soon_threadsafe(self._start)
        elif gathered:
            self.loop.call_soon_threadsafe(self._gathered)
        return done.result()

    def left(self) -> None:
        """In a sync handler's thread that runs no more jobs of this batch: no round waits for it."""
        me = threading.get_ident()
        with self._lock:
            if me not in self._due:
                return
            self._due.discard(me)
            gathered = self._gathering is not None and not self._due
        if gathered:
            self.loop.call_soon_threadsafe(self._gathered)

    def _start(self) -> None:
        self.loop.create_task(self._flush())

    def _gathered(self) -> None:
        waiting = self._gathering
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    async def _flush(self) -> None:
        """Send what has queued, then what queued meanwhile, until nothing is left: one statement per round."""
        try:
            while await self._round():
                pass
        except BaseException:  # cancelled (the loop shutting down): no write may wait for a round that will not come
            with self._lock:
                self._flushing = False
                left, self._queue = self._queue, []
            _fail(left, StepError("the tick ended before this step's result could be recorded; not recorded"))
            raise

    async def _round(self) -> bool:
        """One round: False once nothing was queued (and the next write starts a flush of its own)."""
        await self._gather()
        with self._lock:
            batch, self._queue = self._queue, []
            if not batch:
                self._flushing = False
                return False
        try:
            cur = await self.conn.execute(query("job_steps_record"), {"steps": _steps_json(batch)})
            written = {(job_id, name) for job_id, name in await cur.fetchall()}
        except BaseException as exc:  # each step waiting on this write fails with the reason (a thread too)
            _fail(batch, exc)
            if not isinstance(exc, Exception):
                raise
            return True
        # Counted here, not by the caller: a handler the budget cancels meanwhile made progress too.
        self.written(job_id for job_id, _ in written)
        with self._lock:  # before they wake: the next round waits for them
            self._due.update(w.thread for w in batch if w.thread is not None)
        for w in batch:
            if not w.done.done():
                w.done.set_result((w.job_id, w.name) in written)
        return True

    async def _gather(self) -> None:
        """Wait, at most GATHER_SECONDS, for the threads the last round released to queue their next write."""
        with self._lock:
            if not self._due:
                return
            self._gathering = waiting = self.loop.create_future()
        try:
            async with asyncio.timeout(GATHER_SECONDS):
                await waiting
        except TimeoutError:
            pass
        with self._lock:
            self._gathering = None
            self._due.clear()  # those still away are not waited for again until they write


_NAME = json.JSONEncoder(ensure_ascii=False).encode  # a step's name as a JSON string


def _steps_json(writes: list[Write]) -> str:
    """The round's steps as sql/functions/job_steps_record.sql takes them, [job_id, attempt, name, result, seconds]
    each, the result embedded as the JSON it already is: encoded as a string, each would be encoded twice (escaped
    here, unescaped there). Every text is JSON that jsonb takes (crontick.workflows.calls.encoded checked it)."""
    return (
        "["
        + ",".join(
            f"[{w.job_id},{w.attempt},{_NAME(w.name)},{w.text},{'null' if w.seconds is None else repr(w.seconds)}]"
            for w in writes
        )
        + "]"
    )


def _fail(writes: list[Write], exc: BaseException) -> None:
    for w in writes:
        if not w.done.done():
            w.done.set_exception(exc)
