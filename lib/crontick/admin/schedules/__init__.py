"""Schedules in the admin: the Schedules page with Enqueue now, Pause and Resume, the same under
/api/admin/schedules/{name}, and their store."""

from __future__ import annotations

from starlette.routing import BaseRoute

from crontick.admin import routing
from crontick.admin.routing import TEXT, ApiRoute, Operation, Param

SCHEDULE = (Param("name", TEXT),)


def routes() -> list[BaseRoute]:
    return [
        *routing.page("/admin/schedules", "schedules.page:schedules"),
        routing.route("/admin/schedules/{name}/{verb}", "schedules.page:schedule_action"),
    ]


def api_routes() -> list[ApiRoute]:
    said = {
        "enqueue": ("Enqueue one job of the schedule now, outside its slots (a manual run; it takes no slot)", "ScheduleEnqueued", "The new job."),
        "pause": ("Pause the schedule: it enqueues nothing and records its slots as skipped (paused)", "SchedulePause", "Paused."),
        "resume": ("Resume the schedule; the slots that came due while paused stay skipped (paused)", "SchedulePause", "Resumed."),
    }  # fmt: skip
    return [
        routing.api(
            f"/api/admin/schedules/{{name}}/{verb}",
            f"schedules.api:{verb}",
            "POST",
            Operation(summary, (schema, description), errors=(404,), path=SCHEDULE),
            write=True,
        )
        for verb, (summary, schema, description) in said.items()
    ]
