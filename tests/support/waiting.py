"""Waiting, in the prompt-start tests, for what another thread or process does next."""

from __future__ import annotations

import time
from typing import Any


def wait_until(check: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.005)
    raise AssertionError("timed out waiting")
