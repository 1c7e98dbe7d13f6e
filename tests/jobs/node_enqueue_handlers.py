"""The Python side of examples/node/enqueue.mjs, for tests/jobs/test_queue_from_node.py: the job type a Node service enqueues."""

from __future__ import annotations

from typing import Any

import crontick

# Every run of the handler, in order: a job run twice shows up twice.
runs: list[tuple[int, Any]] = []


@crontick.handler("signup.welcome_email")
def welcome_email(payload: Any, job: crontick.Job) -> None:
    """What a real app's handler would do with its email provider; here it notes the run."""
    runs.append((job.id, payload))
