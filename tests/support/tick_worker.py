"""Worker processes that run real ticks against the test database (for the concurrency and kill -9 tests).

They are forked from a forkserver that has imported crontick once, so eight of them start in
milliseconds instead of paying the import each; each is still a separate OS process with its
own connection. Each worker hands back what its ticks answered, so a race that ends short can
say why rather than only by how much.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.context import ForkServerContext, ForkServerProcess
from typing import Any

from crontick import db
from crontick.settings import Settings
from crontick.tick.pipeline import TickResult, run_tick

COUNTS = ("sent", "failed", "unknown", "retried")
# The races measure exactly-once across processes, not the budget: under load (2 cores, other
# suites beside them) a tick of 40 sends outran the default 8 s, and a send cut by the budget is
# retried about a minute later, which a drain at a fixed `now` never reaches (480 of 500 sent).
RACE_TIME_BUDGET_SECONDS = 30.0
UNSENT_SHOWN = 20  # of the reminders a short race left unsent, the first this many in its message


@dataclass(frozen=True)
class Answer:
    """What one tick of a worker answered about reminders, when it said work is next due, and how long it took."""

    sent: int
    failed: int
    unknown: int
    retried: int
    more: bool
    next_due_at: datetime | None
    duration_ms: int

    @classmethod
    def of(cls, result: TickResult) -> Answer:
        counts = result.reminders
        return cls(*(getattr(counts, n) for n in COUNTS), counts.more, result.next_due_at, result.duration_ms)

    def __str__(self) -> str:
        due = self.next_due_at.isoformat() if self.next_due_at else None
        counts = " ".join(f"{name}={getattr(self, name)}" for name in COUNTS)
        return f"{counts} more={self.more} next_due_at={due} in {self.duration_ms} ms"


@dataclass(frozen=True)
class WorkerResult:
    """One worker's ticks, in order."""

    pid: int
    answers: tuple[Answer, ...]

    @property
    def sent(self) -> int:
        return sum(a.sent for a in self.answers)

    def __str__(self) -> str:
        ticks = "\n".join(f"    {a}" for a in self.answers)
        return f"  worker {self.pid}: {len(self.answers)} ticks, {self.sent} sent\n{ticks}"


def context() -> ForkServerContext:
    ctx = multiprocessing.get_context("forkserver")
    assert isinstance(ctx, ForkServerContext)
    ctx.set_forkserver_preload([__name__])
    return ctx


async def ticks(values: dict[str, Any], now: datetime, mode: str) -> WorkerResult:
    """Tick once (mode 'once') or until a tick finds nothing to do (mode 'drain'); returns what each answered."""
    settings = Settings(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
    conn = await db.connect(values["database_url"])
    answers: list[Answer] = []
    try:
        while True:
            result = await run_tick(conn, settings, now=now, source="worker")
            rem = result.reminders
            answers.append(Answer.of(result))
            if mode == "once" or (not any(getattr(rem, name) for name in COUNTS) and not rem.more):
                return WorkerResult(os.getpid(), tuple(answers))
    finally:
        await conn.close()


def worker(values: dict[str, Any], now_iso: str, mode: str, ready: Any, go: Any, results: Any) -> None:
    ready.release()
    go.wait()
    results.put(asyncio.run(ticks(values, datetime.fromisoformat(now_iso), mode)))


Unsent = Callable[[], Sequence[Mapping[str, Any]]]


class Workers:
    """Start `count` workers, wait until all are ready, then release them together."""

    def __init__(self, count: int, values: dict[str, Any], now: datetime, mode: str) -> None:
        ctx = context()
        self.ready = ctx.Semaphore(0)
        self.go = ctx.Event()
        self.results = ctx.Queue()
        self.procs: list[ForkServerProcess] = [
            ctx.Process(target=worker, args=(values, now.isoformat(), mode, self.ready, self.go, self.results))
            for _ in range(count)
        ]
        for p in self.procs:
            p.start()
        for _ in self.procs:
            assert self.ready.acquire(timeout=60), "a worker did not start"
        self.go.set()

    def finish(
        self, timeout: float = 60, *, sent: int | None = None, unsent: Unsent | None = None
    ) -> list[WorkerResult]:
        """Each worker's result. With `sent`: the workers must have sent that many between them, or the
        failure shows each worker's answers and `unsent()` (the reminders not sent, as rows)."""
        results = [self.results.get(timeout=timeout) for _ in self.procs]
        for p in self.procs:
            p.join(timeout)
            assert p.exitcode == 0, f"worker {p.pid} exited with {p.exitcode}"
        if sent is not None:
            got = sum(r.sent for r in results)
            assert got == sent, short_race(results, sent, got, unsent() if unsent else ())
        return results


def short_race(results: Sequence[WorkerResult], expected: int, got: int, unsent: Sequence[Mapping[str, Any]]) -> str:
    """Why a race sent fewer (or more) reminders than it should: what each worker's ticks answered,
    and the reminders left unsent with their status and next attempt."""
    lines = [f"expected {len(results)} workers to send {expected} reminders between them, got: {got}"]
    lines += ["each worker's ticks answered:", *(str(r) for r in results)]
    lines.append(f"{len(unsent)} reminders unsent" + (":" if unsent else ""))
    for row in unsent[:UNSENT_SHOWN]:
        lines.append("  " + ", ".join(f"{k}={v}" for k, v in row.items()))
    if len(unsent) > UNSENT_SHOWN:
        lines.append(f"  ... and {len(unsent) - UNSENT_SHOWN} more")
    return "\n".join(lines)
