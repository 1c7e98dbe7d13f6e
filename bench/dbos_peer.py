"""DBOS Transact as a peer of durable steps: the same three-step no-op workflow, in its own processes.

`python -m bench.dbos_peer enqueue|drain URL JOBS SEEN_FILE [WORKER_CONCURRENCY]` (the bench venv, where `dbos` is
installed; WORKER_CONCURRENCY one of WORKER_CONCURRENCIES, default the last).
`enqueue` launches DBOS listening to no queue and enqueues JOBS workflows on the queue; `drain` launches a
fresh DBOS process that listens to it and prints, as JSON, the seconds from launch until every workflow has
marked the seen file. So the drain is timed alone, like crontick's `tick --drain` of jobs enqueued before.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from .seen import Seen

QUEUE = "bench_steps3"
# Fair settings, said in docs/benchmarks.md: DBOS at its best of these (bench.workflows runs each; 10 is crontick's
# CRONTICK_CONCURRENCY, 100 its batch), and a poll every 50 ms (the default is 1 s, which alone would cap a drain
# at 100 workflows a second).
WORKER_CONCURRENCIES = (10, 40, 100)
POLLING_INTERVAL_SECONDS = 0.05
EXECUTOR_THREADS = max(WORKER_CONCURRENCIES)  # a thread per workflow running at once (DBOS runs sync ones in threads)

_seen: Seen | None = None


def _dbos(url: str) -> Any:
    from dbos import DBOS

    config: dict[str, Any] = {
        "name": "crontick-bench",
        "system_database_url": url,
        "application_version": "bench",
        "executor_id": "bench-1",
        "max_executor_threads": EXECUTOR_THREADS,
        "sys_db_pool_size": 20,
        "log_level": "WARNING",
    }
    DBOS(config=config)  # type: ignore[arg-type]

    @DBOS.step()
    def first(i: int) -> int:
        return i

    @DBOS.step()
    def second(i: int) -> int:
        return i

    @DBOS.step()
    def third(i: int) -> int:
        return i

    @DBOS.workflow()
    def steps3(i: int) -> None:
        first(i)
        second(i)
        third(i)
        assert _seen is not None
        _seen.mark(i)

    return DBOS, steps3


def _queue(dbos: Any, concurrency: int) -> None:
    dbos.register_queue(QUEUE, worker_concurrency=concurrency, polling_interval_sec=POLLING_INTERVAL_SECONDS)


def enqueue(url: str, jobs: int, concurrency: int) -> float:
    dbos, steps3 = _dbos(url)
    dbos.listen_queues([])  # this process only enqueues
    dbos.launch()
    _queue(dbos, concurrency)
    began = time.perf_counter()
    for i in range(jobs):
        dbos.enqueue_workflow(QUEUE, steps3, i)
    seconds = time.perf_counter() - began
    dbos.destroy()
    return seconds


def drain(url: str, jobs: int, seen: Seen, concurrency: int) -> float:
    dbos, _ = _dbos(url)
    dbos.listen_queues([QUEUE])
    began = time.perf_counter()
    dbos.launch()
    _queue(dbos, concurrency)
    deadline = began + 600
    while seen.count() < jobs and time.perf_counter() < deadline:
        time.sleep(0.005)
    seconds = time.perf_counter() - began
    dbos.destroy()
    return seconds


def main(argv: list[str]) -> int:
    global _seen
    what, url, jobs, path = argv[0], argv[1], int(argv[2]), Path(argv[3])
    concurrency = int(argv[4]) if len(argv) > 4 else WORKER_CONCURRENCIES[-1]
    _seen = Seen(path)
    seconds = enqueue(url, jobs, concurrency) if what == "enqueue" else drain(url, jobs, _seen, concurrency)
    print(json.dumps({"seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
