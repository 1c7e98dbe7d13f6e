"""A schedule declared for one test only (crontick.schedule), removed from the registry afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import crontick
from crontick.schedules import registry


@contextmanager
def declared(name: str, cron: str, job_type: str, payload: Any = None) -> Iterator[str]:
    """crontick.schedule(name, cron, job_type, payload) for the `with` block; yields the name."""
    crontick.schedule(name, cron, job_type, payload)
    try:
        yield name
    finally:
        registry.unregister(name)
