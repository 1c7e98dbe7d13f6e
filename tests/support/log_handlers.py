"""Job types (t_log.*) that write log lines while they run, for tests/logs; a host logging set-up when asked.

Named in CRONTICK_HANDLERS of a `crontick tick` subprocess. With T_LOG_HOST_LOGGING=1 it plays a host
app that configured logging: one root handler with crontick.logs.JobFields, writing each record as JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

import crontick
from crontick import logs

app_log = logging.getLogger("app.jobs")


class _JsonRecords(logging.Formatter):
    """The host's own JSON formatter: the record's message and the fields JobFields put on it."""

    def format(self, record: logging.LogRecord) -> str:
        fields = {name: getattr(record, name, "missing") for name in logs.JOB_FIELDS}
        return json.dumps({"logger": record.name, "message": record.getMessage(), **fields})


if os.environ.get("T_LOG_HOST_LOGGING") == "1":
    host = logging.StreamHandler(sys.stderr)
    host.addFilter(logs.JobFields())
    host.setFormatter(_JsonRecords())
    logging.basicConfig(level=logging.INFO, handlers=[host])


@crontick.handler("t_log.async_job")
async def async_job(payload: Any, job: crontick.Job) -> None:
    app_log.info("async handler %s", payload["n"])
    await asyncio.to_thread(app_log.info, "async handler's thread %s", payload["n"])
    logs.info("t_log_note", n=payload["n"])  # a line crontick's own helper writes while the job runs


@crontick.handler("t_log.sync_job")
def sync_job(payload: Any, job: crontick.Job) -> None:
    app_log.info("sync handler %s", payload["n"])
    logs.info("t_log_note", n=payload["n"])
    if payload.get("fail"):
        raise ValueError("fails, to be retried")
