"""Jobs in the admin: the Failed, Jobs and Job pages with their actions (retry, cancel, delete, run now, signal, and
retry or run now in bulk), the same under /api/admin/jobs, and their store.

Modules: `page` (the pages and one job's actions), `bulk` (the bulk forms, chunk after chunk), `api` (JSON),
`store` (reads and audited actions), `search` (the due/scheduled split and the error search), `steps` (durable steps).
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from crontick.admin import routing
from crontick.admin.routing import CURSOR, LIMIT, TEXT, ApiRoute, Operation, Param

# A payload search reads at most this many ids per request (admin_jobs_search).
SEARCH_WINDOW_IDS = 20_000
# A bulk action (retry, run now) changes at most this many jobs per statement.
BULK_CHUNK = 500
# The pending statuses' halves: due (run_after has come) and scheduled (due later).
PENDING_SPLIT = ("due", "scheduled")
# An error search reads at most this many failed jobs (the newest below its cursor) per page.
ERROR_WINDOW_JOBS = 5_000
ERROR_TEXT_MAX_CHARS = 200


def routes() -> list[BaseRoute]:
    return [
        *routing.page("/admin", "jobs.page:failed"),
        *routing.page("/admin/jobs", "jobs.page:jobs"),
        *routing.page("/admin/jobs/{id}", "jobs.page:job"),
        routing.route("/admin/jobs/bulk-retry", "jobs.bulk:bulk_retry"),
        routing.route("/admin/jobs/bulk-retry/continue", "jobs.bulk:bulk_continue", "GET"),
        routing.route("/admin/jobs/bulk-run-now", "jobs.bulk:bulk_run_now"),
        routing.route("/admin/jobs/{id}/{verb}", "jobs.page:job_action"),
    ]


JOB_ID = (Param("id", "Id"),)
QUERY = (
    Param(
        "status",
        "JobFilterStatus",
        "Only this status; `due` and `scheduled` split `pending` on run_after (now, later).",
    ),
    Param("type", TEXT, "Only this job type."),
    Param(
        "payload",
        TEXT,
        'Payload containment, a JSON object: {"user_id": 42}. Searches '
        f"{SEARCH_WINDOW_IDS:,} ids per page; a page may be short and still have a next_cursor.",
    ),
    Param(
        "error",
        TEXT,
        "Failed jobs whose last error contains this text (case ignored, at most 200 characters). Reads the newest"
        f" {ERROR_WINDOW_JOBS:,} failed jobs below the cursor per page; a page may be short and still have"
        " a next_cursor.",
    ),
    LIMIT,
    CURSOR,
)
CHUNK_AGAIN = "What this chunk did; call again with next_after_id and max_id until next_after_id is null."


def api_routes() -> list[ApiRoute]:
    return [
        routing.api(
            "/api/admin/jobs",
            "jobs.api:list_jobs",
            "GET",
            Operation(
                "Jobs, newest first (keyset pages)",
                ("JobPage", "A page of jobs (errors cut to 200 characters, no payloads)."),
                query=QUERY,
            ),
        ),
        routing.api(
            "/api/admin/jobs/retry",
            "jobs.api:bulk_retry",
            "POST",
            Operation(
                "Retry the next chunk (500) of the jobs a frozen filter matches",
                ("BulkRetried", CHUNK_AGAIN),
                body="BulkRetry",
            ),
            write=True,
        ),
        routing.api(
            "/api/admin/jobs/{id}",
            "jobs.api:get_job",
            "GET",
            Operation(
                "One job with its payload, whole error, every attempt and its durable steps",
                ("JobDetail", "The job."),
                errors=(404,),
                path=JOB_ID,
            ),
        ),
        *_actions(),
        routing.api(
            "/api/admin/jobs/run-now",
            "jobs.api:bulk_run_now",
            "POST",
            Operation(
                "Make due now the next chunk (500) of scheduled jobs (pending, due later) a frozen filter matches",
                ("BulkRunNow", CHUNK_AGAIN),
                body="BulkRunNowFilter",
            ),
            write=True,
        ),
        routing.api(
            "/api/admin/jobs/{id}/run-now",
            "jobs.api:run_now",
            "POST",
            Operation(
                "Make a pending job due now; its attempts are untouched",
                ("Job", "The job, due now."),
                errors=(404, 409),
                path=JOB_ID,
            ),
            write=True,
        ),
    ]


def _actions() -> list[ApiRoute]:
    """POST /api/admin/jobs/{id}/<verb>: one job's retry, cancel, signal and delete."""
    said = {
        "retry": ("Run a done, failed or cancelled job again; attempts and history are kept", "Job", "The job, now pending."),
        "cancel": ("Cancel a pending, sleeping or waiting job at once, or ask a running one to stop at its next step", "Job", "The job, now cancelled (a running one: still running, its cancel_requested_at set)."),
        "signal": ("Wake a waiting job (job.wait_for) with a payload, as crontick.signal would", "Job", "The job, now pending and due."),
        "delete": ("Delete a done, failed or cancelled job and its attempts", "Deleted", "Deleted."),
    }  # fmt: skip
    return [
        routing.api(
            f"/api/admin/jobs/{{id}}/{verb}",
            f"jobs.api:{verb}",
            "POST",
            Operation(
                summary,
                (schema, description),
                errors=(404, 409),
                path=JOB_ID,
                body="Signal" if verb == "signal" else None,
            ),
            write=True,
        )
        for verb, (summary, schema, description) in said.items()
    ]
