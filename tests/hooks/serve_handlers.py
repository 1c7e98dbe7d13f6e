"""CRONTICK_HANDLERS module for the `crontick serve` prompt-start test: a hook and a handler that logs its start."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import crontick

crontick.inbound("wa", "t_kick.reply", verify="twilio")  # secret from TWILIO_AUTH_TOKEN, as users would


@crontick.handler("t_kick.reply")
def reply(payload: Any, job: crontick.Job) -> None:
    line = {"job_id": job.id, "event_id": payload["event_id"], "started": time.time(), "pid": os.getpid()}
    with open(os.environ["T_KICK_LOG"], "a") as f:
        f.write(json.dumps(line) + "\n")
