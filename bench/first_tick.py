"""A fresh process's first tick: load api/cron/tick.py, then serve one POST through its ASGI app."""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import runpy  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ENTRY = Path(__file__).resolve().parent.parent / "api" / "cron" / "tick.py"


async def post(app: Any, path: str, secret: str) -> tuple[int, bytes]:
    """One request through the ASGI interface, as a platform's runtime would hand it over."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"bench.invalid"), (b"authorization", f"Bearer {secret}".encode())],
        "client": ("127.0.0.1", 40000),
        "server": ("bench.invalid", 443),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def main() -> None:
    app = runpy.run_path(str(ENTRY))["app"]
    imported = time.perf_counter()
    status, body = asyncio.run(post(app, "/api/cron/tick", os.environ["CRON_SECRET"]))
    ticked = time.perf_counter()
    print(
        json.dumps(
            {
                "import_ms": round((imported - STARTED) * 1000, 1),
                "connect_and_tick_ms": round((ticked - imported) * 1000, 1),
                "status": status,
                "body": json.loads(body),
            }
        )
    )


if __name__ == "__main__":
    main()
