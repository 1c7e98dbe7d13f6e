"""job.map: one recorded step per item (`name[i]`), results in the items' order, up to `concurrency` at once.

Each item is a step of its own (crontick.workflows.steps), so a retry, a rescue or a yield resumes at the first
unrecorded item: the recorded ones return their results without calling `fn`. The first item that raises stops
the map (no item is started after it) and its exception leaves the handler, as a step's would.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any

from crontick.errors import ConfigError
from crontick.workflows import steps

MAX_MAP_CONCURRENCY = 100
# around(item's step name, call): how each item's step is called; crontick.jobs.job_spans.around_step puts each in a
# span of its own while the app traces (job.map passes it), else the call alone.
Around = Callable[[str, Callable[[], Any]], Any]


def _bare(name: str, call: Callable[[], Any]) -> Any:
    return call()


def map_items(
    job: steps.StepJob,
    name: str,
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    concurrency: int,
    around: Around = _bare,
) -> Any:
    """job.map: fn(item) for each item, each recorded as step `name[i]`; a list in the items' order (awaitable in
    an async handler)."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_MAP_CONCURRENCY:
        raise ConfigError(
            f"job {job.id} ({job.type}) job.map({name!r}): expected concurrency as an integer from 1 to "
            f"{MAX_MAP_CONCURRENCY}, got {concurrency!r}"
        )
    steps.claim_name(job, name, "job.map")
    listed = list(items)

    def one(i: int, item: Any) -> Any:
        item_name = f"{name}[{i}]"
        return around(item_name, lambda: steps.step(job, item_name, fn, (item,), {}))

    if steps.on_loop():
        return _map_async(one, listed, concurrency)
    if concurrency == 1:
        return [one(i, item) for i, item in enumerate(listed)]
    return _map_in_threads(one, listed, concurrency)


async def _map_async(one: Callable[[int, Any], Any], items: list[Any], concurrency: int) -> Any:
    results: list[Any] = [None] * len(items)
    todo = iter(enumerate(items))

    async def worker() -> None:
        for i, item in todo:  # shared: each worker takes the next item
            results[i] = await one(i, item)

    if concurrency == 1 or len(items) <= 1:
        await worker()
        return results
    tasks = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(items)))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()  # the first failure stops the others (a no-op on the finished ones)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return results


def _map_in_threads(one: Callable[[int, Any], Any], items: list[Any], concurrency: int) -> Any:
    """A sync handler's map with concurrency > 1: its items in a pool of threads, each with the handler's context."""
    results: list[Any] = [None] * len(items)
    todo = iter(enumerate(items))
    stop: list[BaseException] = []

    def worker() -> None:
        try:
            for i, item in todo:
                if stop:
                    return
                results[i] = one(i, item)
        except BaseException as exc:  # noqa: BLE001 - handed to the handler's thread below
            stop.append(exc)
        finally:
            steps.thread_left()  # this thread records no more: no group commit waits for it

    with ThreadPoolExecutor(max_workers=min(concurrency, len(items)), thread_name_prefix="crontick-map") as pool:
        running: list[Future[None]] = [
            pool.submit(contextvars.copy_context().run, worker) for _ in range(min(concurrency, len(items)))
        ]
        wait(running, return_when=FIRST_EXCEPTION)
    if stop:
        raise stop[0]
    return results
