"""Reminders in the admin: the Reminders page, /api/admin/reminders, and their store (the send log, the bookings due
soon, a failed or unknown send's retry)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from crontick.admin import routing
from crontick.admin.routing import CURSOR, LIMIT, TEXT, ApiRoute, Operation, Param


def routes() -> list[BaseRoute]:
    return [
        *routing.page("/admin/reminders", "reminders.page:reminders"),
        routing.route("/admin/reminders/{booking_id}/{kind}/retry", "reminders.page:reminder_retry"),
    ]


def api_routes() -> list[ApiRoute]:
    return [
        routing.api(
            "/api/admin/reminders",
            "reminders.api:list_reminders",
            "GET",
            Operation(
                "The reminder send log, newest first",
                ("ReminderPage", "A page of sends."),
                query=(Param("status", "ReminderStatus", "Only this status."), LIMIT, CURSOR),
            ),
        ),
        routing.api(
            "/api/admin/reminders/due",
            "reminders.api:due_reminders",
            "GET",
            Operation(
                "Confirmed bookings starting in the next 24 hours, with their sends",
                ("DueBookings", "Soonest first."),
                query=(LIMIT,),
            ),
        ),
        routing.api(
            "/api/admin/reminders/{booking_id}/{kind}/retry",
            "reminders.api:retry_reminder",
            "POST",
            Operation(
                "Send a failed or unknown reminder again (check the provider first)",
                ("Reminder", "The send, due again now."),
                errors=(404, 409),
                path=(Param("booking_id", TEXT), Param("kind", TEXT)),
            ),
            write=True,
        ),
    ]
