"""The OpenAPI 3.1 document of the JSON admin API (crontick.admin.api), served at /api/admin/openapi.json."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..alerts import EVENTS as ALERT_EVENTS
from ..alerts import STATUSES as ALERT_STATUSES
from ..queue import STATUSES
from ..reminders import STATUSES as REMINDER_STATUSES
from . import store

MAX_ID = 2**63 - 1
TIME = {"type": "string", "format": "date-time"}
TIME_OR_NULL = {"type": ["string", "null"], "format": "date-time"}
TEXT_OR_NULL = {"type": ["string", "null"]}
INT = {"type": "integer"}
ID = {"type": "integer", "minimum": 1, "maximum": MAX_ID}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or list(properties)}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {
    "400": "A parameter, cursor or body the API cannot use (`bad_request`).",
    "401": "No or a wrong bearer secret (`unauthorized`); sent with `WWW-Authenticate: Bearer`.",
    "403": "The viewer secret on an action (`read_only`).",
    "404": "No such job or reminder (`not_found`).",
    "409": "The job or reminder is in a status the action does not apply to (`conflict`), or the job's key is "
    "held by another pending or running job (`key_taken`).",
    "503": "The admin is closed because CRONTICK_ADMIN_SECRET is unset (`admin_not_configured`), the database "
    "cannot be reached (`database_unavailable`), or a read ran past its 2 s statement timeout (`unavailable`).",
}


def _responses(ok: dict[str, Any], *codes: str) -> dict[str, Any]:
    out = {"200": ok}
    for code in ("400", "401", *codes, "503"):
        out[code] = _json(_ref("Error"), ERRORS[code])
    return out


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _path(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


LIMIT = _query("limit", {"type": "integer", "minimum": 1, "maximum": store.MAX_LIMIT, "default": 50}, "Rows per page.")
CURSOR = _query("cursor", {"type": "string"}, "The `next_cursor` of the previous page.")


def _schemas() -> dict[str, Any]:
    job_common = {
        "id": ID,
        "type": {"type": "string"},
        "status": {"type": "string", "enum": list(STATUSES)},
        "attempts": INT,
        "max_attempts": INT,
        "run_after": TIME,
        "key": TEXT_OR_NULL,
        "created_at": TIME,
        "updated_at": TIME,
        "finished_at": TIME_OR_NULL,
    }
    return {
        "Error": _object({"error": {"type": "string"}, "detail": {"type": "string"}}),
        "JobSummary": _object(
            {
                **job_common,
                "last_error": {
                    "type": ["string", "null"],
                    "maxLength": 200,
                    "description": "The first 200 characters.",
                },
            }
        ),
        "Job": _object({**job_common, "payload": {}, "last_error": TEXT_OR_NULL, "locked_until": TIME_OR_NULL}),
        "Attempt": _object(
            {
                "attempt": INT,
                "started_at": TIME_OR_NULL,
                "finished_at": TIME,
                "outcome": {"type": "string", "enum": ["succeeded", "retried", "failed", "lease_expired"]},
                "error": TEXT_OR_NULL,
            }
        ),
        "JobDetail": {"allOf": [_ref("Job"), _object({"history": {"type": "array", "items": _ref("Attempt")}})]},
        "JobPage": _object({"jobs": {"type": "array", "items": _ref("JobSummary")}, "next_cursor": TEXT_OR_NULL}),
        "Deleted": _object({"id": ID, "deleted": {"const": True}}),
        "BulkRetry": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": list(store.RETRYABLE), "default": "failed"},
                "type": TEXT_OR_NULL,
                "payload": {"type": ["object", "null"]},
                "max_id": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": MAX_ID,
                    "description": "The filter's highest id, frozen at confirmation; omit on the first call.",
                },
                "after_id": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": MAX_ID,
                    "description": "The previous call's `next_after_id`.",
                },
            },
        },
        "BulkRetried": _object(
            {"retried": INT, "skipped_key_taken": INT, "max_id": INT, "next_after_id": {"type": ["integer", "null"]}}
        ),
        "Stats": _object(
            {
                "jobs": {
                    "type": "object",
                    "additionalProperties": INT,
                    "description": f"Per status, counted up to {store.COUNT_CAP + 1} ({store.COUNT_CAP:,}+).",
                },
                "capped": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "oldest_due_seconds": {"type": ["number", "null"]},
                "last_tick_at": TIME_OR_NULL,
                "stale": {"type": "boolean"},
                "as_of": TIME,
                "hourly": {"type": "array", "items": _object({"hour": TIME, "done": INT, "failed": INT, "ticks": INT})},
            }
        ),
        "Reminder": _object(
            {
                "id": INT,
                "booking_id": INT,
                "kind": {"type": "string"},
                "channel": {"type": "string"},
                "status": {"type": "string", "enum": list(REMINDER_STATUSES)},
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
        "ReminderPage": _object(
            {"reminders": {"type": "array", "items": _ref("Reminder")}, "next_cursor": TEXT_OR_NULL}
        ),
        "DueBookings": _object(
            {
                "bookings": {
                    "type": "array",
                    "items": _object(
                        {
                            "booking_id": INT,
                            "customer_name": {"type": "string"},
                            "email": TEXT_OR_NULL,
                            "phone": TEXT_OR_NULL,
                            "starts_at": TIME,
                            "time_zone": {"type": "string"},
                            "sends": {"type": "array"},
                        }
                    ),
                }
            }
        ),
        "TickPage": _object(
            {
                "ticks": {
                    "type": "array",
                    "items": _object(
                        {
                            "id": INT,
                            "started_at": TIME,
                            "finished_at": TIME,
                            "source": {"type": "string"},
                            "summary": {"type": "object"},
                            "gap_seconds": {"type": ["number", "null"]},
                            "gap_flagged": {"type": "boolean"},
                        }
                    ),
                },
                "next_cursor": TEXT_OR_NULL,
            }
        ),
        "HookPage": _object(
            {
                "hooks": {
                    "type": "array",
                    "items": _object(
                        {"name": {"type": "string"}, "verify": {"type": "string"}, "job_type": {"type": "string"}}
                    ),
                },
                "events": {
                    "type": "array",
                    "items": _object(
                        {"hook": {"type": "string"}, "event_id": {"type": "string"}, "job_id": INT, "received_at": TIME}
                    ),
                },
                "next_cursor": TEXT_OR_NULL,
            }
        ),
        "AlertPage": _object(
            {
                "alerts": {
                    "type": "array",
                    "items": _object(
                        {
                            "id": INT,
                            "event": {"type": "string", "enum": list(ALERT_EVENTS)},
                            "subject": {"type": "string"},
                            "status": {"type": "string", "enum": list(ALERT_STATUSES)},
                            "attempts": INT,
                            "occurred_at": TIME,
                            "next_attempt_at": TIME,
                            "sent_at": TIME_OR_NULL,
                            "last_error": {
                                "type": ["string", "null"],
                                "maxLength": 200,
                                "description": "The first 200 characters.",
                            },
                            "created_at": TIME,
                            "updated_at": TIME,
                        }
                    ),
                },
                "next_cursor": TEXT_OR_NULL,
                "sending": {
                    "type": "boolean",
                    "description": "False when CRONTICK_ALERT_WEBHOOK_URL is unset: alerts are recorded but not sent.",
                },
            }
        ),
    }


def _paths() -> dict[str, Any]:
    job_id = _path("id", ID)
    return {
        "/api/admin/jobs": {
            "get": {
                "summary": "Jobs, newest first (keyset pages)",
                "parameters": [
                    _query("status", {"type": "string", "enum": list(STATUSES)}, "Only this status."),
                    _query("type", {"type": "string"}, "Only this job type."),
                    _query(
                        "payload",
                        {"type": "string"},
                        'Payload containment, a JSON object: {"user_id": 42}. Searches '
                        f"{store.SEARCH_WINDOW_IDS:,} ids per page; a page may be short and still have a next_cursor.",
                    ),
                    LIMIT,
                    CURSOR,
                ],
                "responses": _responses(
                    _json(_ref("JobPage"), "A page of jobs (errors cut to 200 characters, no payloads).")
                ),
            }
        },
        "/api/admin/jobs/retry": {
            "post": {
                "summary": "Retry the next chunk (500) of the jobs a frozen filter matches",
                "requestBody": {"required": False, "content": {"application/json": {"schema": _ref("BulkRetry")}}},
                "responses": _responses(
                    _json(
                        _ref("BulkRetried"),
                        "What this chunk did; call again with next_after_id and max_id until next_after_id is null.",
                    ),
                    "403",
                ),
            }
        },
        "/api/admin/jobs/{id}": {
            "get": {
                "summary": "One job with its payload, whole error and every attempt",
                "parameters": [job_id],
                "responses": _responses(_json(_ref("JobDetail"), "The job."), "404"),
            }
        },
        "/api/admin/jobs/{id}/retry": {
            "post": {
                "summary": "Run a done, failed or cancelled job again; attempts and history are kept",
                "parameters": [job_id],
                "responses": _responses(_json(_ref("Job"), "The job, now pending."), "403", "404", "409"),
            }
        },
        "/api/admin/jobs/{id}/cancel": {
            "post": {
                "summary": "Cancel a pending job",
                "parameters": [job_id],
                "responses": _responses(_json(_ref("Job"), "The job, now cancelled."), "403", "404", "409"),
            }
        },
        "/api/admin/jobs/{id}/delete": {
            "post": {
                "summary": "Delete a done, failed or cancelled job and its attempts",
                "parameters": [job_id],
                "responses": _responses(_json(_ref("Deleted"), "Deleted."), "403", "404", "409"),
            }
        },
        "/api/admin/stats": {
            "get": {
                "summary": "Capped counts per status, oldest due job, scheduler staleness, hourly done/failed",
                "responses": _responses(_json(_ref("Stats"), "The numbers.")),
            }
        },
        "/api/admin/reminders": {
            "get": {
                "summary": "The reminder send log, newest first",
                "parameters": [
                    _query("status", {"type": "string", "enum": list(REMINDER_STATUSES)}, "Only this status."),
                    LIMIT,
                    CURSOR,
                ],
                "responses": _responses(_json(_ref("ReminderPage"), "A page of sends.")),
            }
        },
        "/api/admin/reminders/due": {
            "get": {
                "summary": "Confirmed bookings starting in the next 24 hours, with their sends",
                "parameters": [LIMIT],
                "responses": _responses(_json(_ref("DueBookings"), "Soonest first.")),
            }
        },
        "/api/admin/reminders/{booking_id}/{kind}/retry": {
            "post": {
                "summary": "Send a failed or unknown reminder again (check the provider first)",
                "parameters": [_path("booking_id", ID), _path("kind", {"type": "string"})],
                "responses": _responses(_json(_ref("Reminder"), "The send, due again now."), "403", "404", "409"),
            }
        },
        "/api/admin/ticks": {
            "get": {
                "summary": "Recent ticks, with the gap since the one before (flagged over 2x the expected interval)",
                "parameters": [LIMIT, CURSOR],
                "responses": _responses(_json(_ref("TickPage"), "A page of ticks.")),
            }
        },
        "/api/admin/hooks": {
            "get": {
                "summary": "The declared inbound hooks (never their secrets) and recorded events, newest first",
                "parameters": [_query("hook", {"type": "string"}, "Only this hook's events."), LIMIT, CURSOR],
                "responses": _responses(_json(_ref("HookPage"), "The hooks and a page of events.")),
            }
        },
        "/api/admin/alerts": {
            "get": {
                "summary": "The alert outbox, newest first (errors cut to 200 characters, no bodies)",
                "parameters": [
                    _query("status", {"type": "string", "enum": list(ALERT_STATUSES)}, "Only this status."),
                    LIMIT,
                    CURSOR,
                ],
                "responses": _responses(_json(_ref("AlertPage"), "A page of alerts.")),
            }
        },
        "/api/admin/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {
                    "200": {
                        "description": "OpenAPI 3.1",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "401": _json(_ref("Error"), ERRORS["401"]),
                    "503": _json(_ref("Error"), ERRORS["503"]),
                },
            }
        },
    }


@lru_cache(maxsize=1)
def document() -> dict[str, Any]:
    """The whole document: every route needs `Authorization: Bearer <admin or viewer secret>`."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "crontick admin API",
            "version": "1",
            "description": "Bearer CRONTICK_ADMIN_SECRET for everything; CRONTICK_ADMIN_VIEWER_SECRET for reads. "
            'Every 4xx/5xx body is {"error": code, "detail": sentence}.',
        },
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": _paths(),
    }
