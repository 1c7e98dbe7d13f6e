"""The admin API's shared schemas, each defined once: jobs, attempts, reminders, pages, the error body."""

from __future__ import annotations

from typing import Any

from crontick.admin.inputs import DEFAULT_LIMIT, MAX_ID
from crontick.admin.jobs import steps
from crontick.admin.jobs.store import RETRYABLE
from crontick.admin.overview.store import COUNT_CAP
from crontick.admin.tx import MAX_LIMIT
from crontick.jobs.queue import STATUSES
from crontick.reminders.send import STATUSES as REMINDER_STATUSES
from crontick.tick.alerts import EVENTS as ALERT_EVENTS
from crontick.tick.alerts import STATUSES as ALERT_STATUSES

TIME = {"type": "string", "format": "date-time"}
TIME_OR_NULL = {"type": ["string", "null"], "format": "date-time"}
TEXT = {"type": "string"}
TEXT_OR_NULL = {"type": ["string", "null"]}
INT = {"type": "integer"}
ERROR_PREVIEW = {"type": ["string", "null"], "maxLength": 200, "description": "The first 200 characters."}

# What each error status means, for every route that answers it; the body is always `Error`.
ERRORS = {
    400: "A parameter, cursor or body the API cannot use (`bad_request`).",
    401: "No or a wrong bearer secret (`unauthorized`); sent with `WWW-Authenticate: Bearer`.",
    403: "The viewer secret on an action (`read_only`).",
    404: "No such job or reminder (`not_found`).",
    409: "The job or reminder is in a status the action does not apply to (`conflict`), or the job's key is "
    "held by another pending or running job (`key_taken`).",
    503: "The admin is closed because CRONTICK_ADMIN_SECRET is unset (`admin_not_configured`), the database "
    "cannot be reached (`database_unavailable`), or a read ran past its 2 s statement timeout (`unavailable`).",
}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or list(properties)}


def _page(name: str, item: Any, **more: Any) -> dict[str, Any]:
    """A keyset page: its rows under `name`, `next_cursor`, and whatever else the route adds."""
    return _object({name: {"type": "array", "items": item}, "next_cursor": TEXT_OR_NULL, **more})


def _values() -> dict[str, Any]:
    """Values that parameters and objects share."""
    return {
        "Id": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
        "Limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        "JobStatus": {"type": "string", "enum": list(STATUSES)},
        "JobFilterStatus": {"type": "string", "enum": [*STATUSES, "due", "scheduled"]},
        "ReminderStatus": {"type": "string", "enum": list(REMINDER_STATUSES)},
        "AlertStatus": {"type": "string", "enum": list(ALERT_STATUSES)},
        "Error": _object({"error": TEXT, "detail": TEXT}),
    }


def _jobs() -> dict[str, Any]:
    common = {
        "id": ref("Id"),
        "type": TEXT,
        "status": ref("JobStatus"),
        "attempts": INT,
        "max_attempts": INT,
        "run_after": TIME,
        "key": TEXT_OR_NULL,
        "created_at": TIME,
        "updated_at": TIME,
        "finished_at": TIME_OR_NULL,
    }
    return {
        "JobSummary": _object({**common, "last_error": ERROR_PREVIEW}),
        "Job": _object(
            {
                **common,
                "payload": {},
                "payloads": {
                    "type": ["array", "null"],
                    "description": "A debounced job's merged payloads, oldest first (`payload` is the newest; "
                    "job.payloads in the handler); null when it merged none.",
                },
                "last_error": TEXT_OR_NULL,
                "locked_until": TIME_OR_NULL,
                # GET /api/admin/jobs/{id} (issue 23): the schedule and slot it was enqueued for, its snoozes.
                "schedule": TEXT_OR_NULL,
                "scheduled_for": TIME_OR_NULL,
                "snoozes": INT,
                "start_by": {
                    "type": ["string", "null"],
                    "format": "date-time",
                    "description": "Not started by then, the job never starts: it ends cancelled, its last_error "
                    "beginning with `expired` (null: no deadline).",
                },
                "cancel_requested_at": {
                    "type": ["string", "null"],
                    "format": "date-time",
                    "description": "When a cancel asked this running job to stop; it ends cancelled at its next step.",
                },
            },
            [*common, "payload", "last_error", "locked_until"],
        ),
    }


# A job's payload schema (crontick.jobs.payloads), in GET /api/admin/jobs/{id}.
PAYLOAD_SCHEMA = {
    "type": ["object", "null"],
    "description": "The JSON Schema of the job type's payloads, when its handler in this process declares "
    "`payload=Model` (a pydantic model); null otherwise.",
    "properties": {"model": TEXT, "schema": {"type": "object"}},
    "required": ["model", "schema"],
}


def _job_detail() -> dict[str, Any]:
    """One job's attempts and durable steps (crontick.workflows), a job page, and a deleted job."""
    return {
        "Attempt": _object(
            {
                "attempt": INT,
                "started_at": TIME_OR_NULL,
                "finished_at": TIME,
                "outcome": {"type": "string", "enum": ["succeeded", "retried", "failed", "lease_expired"]},
                "error": TEXT_OR_NULL,
                "traceback": {
                    "type": ["string", "null"],
                    "description": "The failed attempt's traceback (at most 16 KiB, configured secrets removed).",
                },
                "tick": {
                    "type": ["object", "null"],
                    "description": "The tick that recorded the attempt (null for a rescued one).",
                    "properties": {"id": INT, "source": TEXT_OR_NULL, "execution_id": TEXT_OR_NULL},
                },
            },
            ["attempt", "started_at", "finished_at", "outcome", "error", "traceback"],
        ),
        # Durable steps (crontick.workflows): each recorded step, and what a waiting job waits for.
        "Step": _object(
            {
                "name": TEXT,
                "kind": {"type": "string", "enum": ["step", "sleep", "wait"]},
                "status": {"type": "string", "enum": ["done", "waiting", "signalled", "timed_out"]},
                "attempt": INT,
                "created_at": TIME,
                "finished_at": TIME_OR_NULL,
                "event_key": TEXT_OR_NULL,
                "wait_until": TIME_OR_NULL,
                "preview": {
                    "type": ["string", "null"],
                    "maxLength": steps.STEP_PREVIEW_CHARS,
                    "description": f"The result as JSON text, its first {steps.STEP_PREVIEW_CHARS} characters.",
                },
                "result_chars": {"type": ["integer", "null"], "description": "The whole result's length."},
            }
        ),
        "Wait": _object({"step": TEXT, "event_key": TEXT, "until": TIME}),
        "Signal": {
            "type": "object",
            "properties": {
                "payload": {"description": "What the job's job.wait_for returns (any JSON; null by default)."}
            },
            "required": [],
        },
        "JobDetail": {
            "allOf": [
                ref("Job"),
                _object(
                    {
                        "history": {"type": "array", "items": ref("Attempt")},
                        "steps": {"type": "array", "items": ref("Step"), "maxItems": steps.STEPS_SHOWN},
                        "waiting_for": {"anyOf": [ref("Wait"), {"type": "null"}]},
                        "payload_schema": PAYLOAD_SCHEMA,
                    }
                ),
            ]
        },
        "JobPage": _page("jobs", ref("JobSummary")),
        "Deleted": _object({"id": ref("Id"), "deleted": {"const": True}}),
    }


def _job_actions() -> dict[str, Any]:
    """Bulk retry's and bulk run now's bodies and answers."""
    optional_id = {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_ID}
    return {
        "BulkRetry": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": list(RETRYABLE), "default": "failed"},
                "type": TEXT_OR_NULL,
                "payload": {"type": ["object", "null"]},
                "max_id": {
                    **optional_id,
                    "description": "The filter's highest id, frozen at confirmation; omit on the first call.",
                },
                "after_id": {**optional_id, "description": "The previous call's `next_after_id`."},
            },
        },
        "BulkRetried": _object(
            {"retried": INT, "skipped_key_taken": INT, "max_id": INT, "next_after_id": {"type": ["integer", "null"]}}
        ),
        "BulkRunNowFilter": {
            "type": "object",
            "properties": {
                "type": TEXT_OR_NULL,
                "payload": {"type": ["object", "null"]},
                "max_id": {**optional_id, "description": "Frozen at confirmation; omit on the first call."},
                "after_id": {**optional_id, "description": "The previous call's `next_after_id`."},
            },
        },
        "BulkRunNow": _object({"moved": INT, "max_id": INT, "next_after_id": {"type": ["integer", "null"]}}),
    }


def _overview() -> dict[str, Any]:
    """The stats, the ticks and the per-type figures."""
    tick = _object(
        {
            "id": INT,
            "started_at": TIME,
            "finished_at": TIME,
            "source": TEXT,
            "summary": {"type": "object"},
            "gap_seconds": {"type": ["number", "null"]},
            "gap_flagged": {"type": "boolean"},
        }
    )
    number_or_null = {"type": ["number", "null"]}
    figures = _object(
        {
            "type": TEXT,
            "done_1h": INT,
            "failed_1h": INT,
            "done_24h": INT,
            "failed_24h": INT,
            "slow_1h": {**INT, "description": "Attempts that ran CRONTICK_SLOW_JOB_SECONDS or longer (slow_job)."},
            "slow_24h": INT,
            "p50_ms": {**number_or_null, "description": "Within about 20 % (a histogram with buckets 1.41x wide)."},
            "p95_ms": number_or_null,
            "oldest_due_seconds": number_or_null,
            "paused": {"type": "boolean"},
        }
    )
    return {
        "Stats": _object(
            {
                "jobs": {
                    "type": "object",
                    "additionalProperties": INT,
                    "description": f"Per status, counted up to {COUNT_CAP + 1} ({COUNT_CAP:,}+).",
                },
                "capped": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "oldest_due_seconds": {"type": ["number", "null"]},
                "last_tick_at": TIME_OR_NULL,
                "stale": {"type": "boolean"},
                "as_of": TIME,
                "hourly": {"type": "array", "items": _object({"hour": TIME, "done": INT, "failed": INT, "ticks": INT})},
                "wakeups": _object(
                    {
                        "next_booked_at": TIME_OR_NULL,
                        "last_failed_at": TIME_OR_NULL,
                        "last_error": TEXT_OR_NULL,
                        "failed_last_day": INT,
                        "booked_last_day": INT,
                    }
                ),
            }
        ),
        "TickPage": _page("ticks", tick),
        "TypeFigures": _object({"types": {"type": "array", "items": figures}}),
    }


def _reminders() -> dict[str, Any]:
    booking = _object(
        {
            "booking_id": TEXT,  # the reminder source's id as text, whatever its type
            "customer_name": TEXT_OR_NULL,
            "email": TEXT_OR_NULL,
            "phone": TEXT_OR_NULL,
            "starts_at": TIME,
            "time_zone": TEXT_OR_NULL,
            "sends": {"type": "array"},
        }
    )
    return {
        "Reminder": _object(
            {
                "id": INT,
                "booking_id": TEXT,
                "kind": TEXT,
                "channel": TEXT,
                "status": ref("ReminderStatus"),
                "attempts": INT,
                "max_attempts": INT,
                "sent_at": TIME_OR_NULL,
                "next_attempt_at": TIME_OR_NULL,
                "last_error": TEXT_OR_NULL,
                "created_at": TIME,
                "updated_at": TIME,
            },
            ["id", "booking_id", "kind", "channel", "status", "attempts", "max_attempts"],
        ),
        "ReminderPage": _page("reminders", ref("Reminder")),
        "DueBookings": _object({"bookings": {"type": "array", "items": booking}}),
    }


def _feeds() -> dict[str, Any]:
    hook = _object({"name": TEXT, "verify": TEXT, "job_type": TEXT})
    event = _object({"hook": TEXT, "event_id": TEXT, "job_id": INT, "received_at": TIME})
    alert = _object(
        {
            "id": INT,
            "event": {"type": "string", "enum": list(ALERT_EVENTS)},
            "subject": TEXT,
            "status": ref("AlertStatus"),
            "attempts": INT,
            "occurred_at": TIME,
            "next_attempt_at": TIME,
            "sent_at": TIME_OR_NULL,
            "last_error": ERROR_PREVIEW,
            "created_at": TIME,
            "updated_at": TIME,
        }
    )
    sending = {
        "type": "boolean",
        "description": "False when CRONTICK_ALERT_WEBHOOK_URL is unset: alerts are recorded but not sent.",
    }
    return {
        "HookPage": _object(
            {
                "hooks": {"type": "array", "items": hook},
                "events": {"type": "array", "items": event},
                "next_cursor": TEXT_OR_NULL,
            }
        ),
        "AlertPage": _page("alerts", alert, sending=sending),
    }


def _audit() -> dict[str, Any]:
    """The audit log's page."""
    entry = _object(
        {
            "id": INT,
            "at": TIME,
            "role": {**TEXT_OR_NULL, "description": "null only for a failed sign-in (`sign_in_failed`)."},
            "actor": {**TEXT_OR_NULL, "description": "The person an authorize() hook named; null otherwise."},
            "action": TEXT,
            "target": TEXT,
            "count": INT,
            "detail": {},
        },
        ["at", "role", "actor", "action", "target", "count"],
    )
    return {
        "AuditPage": _page("entries", entry),
    }


def _schedules() -> dict[str, Any]:
    """What the schedules' actions answer."""
    return {
        "ScheduleEnqueued": _object({"job_id": ref("Id"), "schedule": TEXT}),
        "SchedulePause": _object({"schedule": TEXT, "paused": {"type": "boolean"}}),
    }


def components() -> dict[str, Any]:
    """Every named schema, for the document's components.schemas."""
    return {
        **_values(),
        **_jobs(),
        **_job_detail(),
        **_job_actions(),
        **_overview(),
        **_reminders(),
        **_feeds(),
        **_audit(),
        **_schedules(),
    }
