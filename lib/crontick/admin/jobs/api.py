"""The jobs under /api/admin/jobs: the list (with its due/scheduled split and error search), one job, its actions,
and retry or run now in bulk over a frozen filter (the routes are declared in crontick.admin.jobs)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import answer, inputs, tx
from crontick.admin.jobs import PENDING_SPLIT, search, store
from crontick.admin.jobs.page import payload_schema
from crontick.jobs.queue import STATUSES


async def list_jobs(request: Request, conn: tx.Conn, role: str) -> Response:
    found = await _split_or_search(request, conn)  # ?status=due|scheduled, ?error= (issue 23)
    if found is not None:
        return answer.api({"jobs": found[0], "next_cursor": found[1]})
    q = request.query_params
    status = inputs.text(q.get("status"), "status")
    if status is not None and status not in STATUSES:
        raise inputs.BadRequest(f"status: expected one of {', '.join(STATUSES)}, got: {status!r}")
    rows, cursor = await store.list_jobs(
        conn,
        status=status,
        type=inputs.text(q.get("type"), "type"),
        payload_contains=inputs.json_object(q.get("payload"), "payload"),
        before_id=tx.decode_cursor(q.get("cursor")),
        limit=inputs.limit(q),
    )
    return answer.api({"jobs": rows, "next_cursor": cursor})


async def _split_or_search(request: Request, conn: tx.Conn) -> tuple[list[Any], Any] | None:
    """?status=due|scheduled (pending, split on run_after) or ?error= (failed jobs by error text): that page,
    or None for list_jobs to answer the other filters."""
    q = request.query_params
    status = inputs.text(q.get("status"), "status")
    text = inputs.text(q.get("error"), "error")
    if not text and status not in PENDING_SPLIT:
        return None
    if q.get("payload"):
        raise inputs.BadRequest("payload: expected no payload filter with error= or status=due|scheduled")
    kind = inputs.text(q.get("type"), "type")
    before, limit = tx.decode_cursor(q.get("cursor")), inputs.limit(q)
    if text:
        if status not in (None, "failed"):
            raise inputs.BadRequest(f"status: expected failed (or none) with error=, got: {status!r}")
        return await search.search_errors(conn, text, type=kind, before_id=before, limit=limit)
    return await search.list_pending(conn, split=status or "", type=kind, before_id=before, limit=limit)


async def get_job(request: Request, conn: tx.Conn, role: str) -> Response:
    job_id = inputs.job_id(request)
    job = await store.get_job(conn, job_id) if job_id else None
    if job:
        await store.attempt_ticks(conn, job["history"])
        # The handler's payload= model here (as the job page shows it), or null.
        found = payload_schema(job["type"])
        job["payload_schema"] = None if found is None else {"model": found[0], "schema": found[1]}
    return answer.api(job) if job else answer.not_found_job(request)


async def retry(request: Request, conn: tx.Conn, role: str) -> Response:
    job_id = inputs.job_id(request)
    if job_id is None:
        return answer.not_found_job(request)
    return answer.action(request, await store.retry_job(conn, job_id, role=role), kick=True)


async def cancel(request: Request, conn: tx.Conn, role: str) -> Response:
    job_id = inputs.job_id(request)
    if job_id is None:
        return answer.not_found_job(request)
    return answer.action(request, await store.cancel_job(conn, job_id, role=role))


async def delete(request: Request, conn: tx.Conn, role: str) -> Response:
    job_id = inputs.job_id(request)
    if job_id is None:
        return answer.not_found_job(request)
    return answer.action(request, await store.delete_job(conn, job_id, role=role))


async def run_now(request: Request, conn: tx.Conn, role: str) -> Response:
    job_id = inputs.job_id(request)
    if job_id is None:
        return answer.not_found_job(request)
    return answer.action(request, await store.run_now_job(conn, job_id, role=role), kick=True)


async def signal(request: Request, conn: tx.Conn, role: str) -> Response:
    """Durable steps: wake a waiting job by hand with the body's `payload`."""
    job_id = inputs.job_id(request)
    if job_id is None:
        return answer.not_found_job(request)
    body = await inputs.body(request)
    return answer.action(
        request, await store.signal_job(conn, job_id, payload=body.get("payload"), role=role), kick=True
    )


async def bulk_retry(request: Request, conn: tx.Conn, role: str) -> Response:
    body = await inputs.body(request)
    status = body.get("status", "failed")
    if status not in store.RETRYABLE:
        raise inputs.BadRequest(f"status: expected one of {', '.join(store.RETRYABLE)}, got: {status!r}")
    type_, payload, max_id, after_id = inputs.bulk_filter(body)
    if max_id is None:  # confirming now: freeze the filter at the newest job
        max_id = await store.max_job_id(conn)
    retried, skipped, next_after = await store.bulk_retry(
        conn, status=status, type=type_, payload_contains=payload, max_id=max_id, after_id=after_id, role=role
    )
    body = {"retried": retried, "skipped_key_taken": skipped, "max_id": max_id, "next_after_id": next_after}
    return answer.kicking(request, answer.api(body)) if retried else answer.api(body)


async def bulk_run_now(request: Request, conn: tx.Conn, role: str) -> Response:
    type_, payload, max_id, after_id = inputs.bulk_filter(await inputs.body(request))
    if max_id is None:  # confirming now: freeze the filter at the newest job
        max_id = await store.max_job_id(conn)
    moved, next_after = await store.bulk_run_now(
        conn, type=type_, payload_contains=payload, max_id=max_id, after_id=after_id, role=role
    )
    body = {"moved": moved, "max_id": max_id, "next_after_id": next_after}
    return answer.kicking(request, answer.api(body)) if moved else answer.api(body)
