"""The shared outbound httpx client: one per event loop, created on first use, reused warm."""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use instead: a tick that sends nothing never pays for httpx
    import httpx

# (connect, read, write, pool) seconds, as httpx takes it: a plain tuple needs no httpx import.
TimeoutTuple = tuple[float | None, float | None, float | None, float | None]
DEFAULT_TIMEOUT: TimeoutTuple = (5.0, 10.0, 10.0, 10.0)

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()


def client() -> httpx.AsyncClient:
    """The client for the running loop (creating one costs milliseconds, so it is cached)."""
    import httpx

    loop = asyncio.get_running_loop()
    existing = _clients.get(loop)
    if existing is None or existing.is_closed:
        existing = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, follow_redirects=False)
        _clients[loop] = existing
    return existing
