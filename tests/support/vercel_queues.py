"""vercel-queue's embedded in-process Queue service with its API served over real HTTP, for the tests of
CRONTICK_WAKER=vercel-queue (tests/wakers) and of its subscriber (tests/vercel_subscriber)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from vercel.queue._internal.embedded import EmbeddedQueueAsgiApp
from vercel.queue.embedded import embedded_queue_service

from tests.support.servers import free_port


@asynccontextmanager
async def queue_over_http() -> AsyncIterator[tuple[Any, str]]:
    """The embedded service (its dispatcher calls the subscribers), its API served over HTTP on this loop;
    yields the service and the API's base URL (VERCEL_QUEUE_BASE_URL)."""
    async with embedded_queue_service() as service:
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(EmbeddedQueueAsgiApp(service.server), host="127.0.0.1", port=port,
                                               log_level="warning", lifespan="off"))  # fmt: skip
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        try:
            yield service, f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            await serving
