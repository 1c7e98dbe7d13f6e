"""A short-lived process that enqueues, kicks and exits (tests/hooks/test_kick_exit.py), and its job type.

`python -m tests.support.exit_kick TYPE COUNT LINGER_SECONDS LOG`: enqueue COUNT jobs of TYPE in one transaction,
call crontick.kick(), sleep LINGER_SECONDS and return, as a script or a management command does. Each run of the
job appends its id to the file its payload names, so a test can see which jobs ran, and how often.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import psycopg

import crontick

WORK = "t_exit.work"  # an async handler: it runs on the kick thread's own loop
WORK_SYNC = "t_exit.work_sync"  # a def handler: it runs in that loop's thread pool
WORK_SECONDS = 0.2  # long enough that a batch of 100 is still running when the process exits 0.5 s after kicking


def ran(payload: Any, job: crontick.Job) -> None:
    with open(payload["log"], "a", encoding="utf-8") as log:
        log.write(f"{job.id}\n")


@crontick.handler(WORK)
async def work(payload: Any, job: crontick.Job) -> None:
    await asyncio.sleep(WORK_SECONDS)
    ran(payload, job)


@crontick.handler(WORK_SYNC)
def work_sync(payload: Any, job: crontick.Job) -> None:
    time.sleep(WORK_SECONDS)
    ran(payload, job)


def main(kind: str, count: int, linger_seconds: float, log: str) -> None:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn, conn.transaction():
        crontick.enqueue_many(conn, [(kind, {"log": log, "n": n}) for n in range(count)])
    crontick.kick()
    time.sleep(linger_seconds)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
