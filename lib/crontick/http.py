"""The shared outbound httpx client: one per event loop, created on first use, reused warm."""

from __future__ import annotations

import asyncio
import weakref

import httpx

DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=5.0)

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()


def client() -> httpx.AsyncClient:
    """The client for the running loop (creating one costs milliseconds, so it is cached)."""
    loop = asyncio.get_running_loop()
    existing = _clients.get(loop)
    if existing is None or existing.is_closed:
        existing = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, follow_redirects=False)
        _clients[loop] = existing
    return existing
