"""The overview under /api/admin: the stats, the ticks and the per-type figures."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import answer, inputs, tx
from crontick.admin.overview import figures, store


def _expected_interval(request: Request) -> float:
    interval: float = getattr(
        request.app.state.runtime.settings, "expected_interval_seconds", store.DEFAULT_EXPECTED_INTERVAL_SECONDS
    )
    return interval


async def stats(request: Request, conn: tx.Conn, role: str) -> Response:
    return answer.api(await store.stats(conn, expected_interval_seconds=_expected_interval(request)))


async def list_ticks(request: Request, conn: tx.Conn, role: str) -> Response:
    q = request.query_params
    rows, cursor = await store.list_ticks(
        conn,
        before_id=tx.decode_cursor(q.get("cursor")),
        expected_interval_seconds=_expected_interval(request),
        limit=inputs.limit(q),
    )
    return answer.api({"ticks": rows, "next_cursor": cursor})


async def list_types(request: Request, conn: tx.Conn, role: str) -> Response:
    return answer.api({"types": await figures.type_figures(conn)})
