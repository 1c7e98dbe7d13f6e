"""The Reminders page (the bookings due soon and the send log) and a failed or unknown send's retry."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import gate, inputs, params
from crontick.admin.answer import error
from crontick.admin.reminders import store
from crontick.admin.return_to import safe_back
from crontick.admin.view import PAGE_ROWS, View
from crontick.reminders.send import STATUSES


async def reminders(request: Request) -> Response:
    async def build(view: View) -> Response:
        status = params.choice(view.request.query_params.get("status"), "status", STATUSES)
        before = view.cursor()
        source = view.settings.reminder_source_parts
        due = await view.panel(lambda tx: store.due_reminders(tx, limit=PAGE_ROWS, source=source))
        sends = await view.panel(
            lambda tx: store.list_reminders(tx, status=status or None, before=before, limit=PAGE_ROWS, source=source),
        )
        rows, next_cursor = sends if sends is not None else (None, None)
        data = {"due": due, "sends": rows, "next_cursor": next_cursor, "status": status, "statuses": STATUSES}
        return view.page("reminders.html", data, title="Reminders", nav="reminders")

    return await gate.page(request, build)


async def reminder_retry(request: Request) -> Response:
    # The reminder source's id as text (a uuid, a number, anything: reminder_sends.booking_id).
    found = request.path_params["booking_id"]
    kind = request.path_params["kind"]
    if not found or len(found) > 200 or not params.storable(found) or len(kind) > 63 or not params.storable(kind):
        return error(
            request,
            404,
            "reminder_not_found",
            "expected a booking id and a reminder kind, got: "
            f"{params.shown(request.path_params['booking_id'])} and {params.shown(kind)}",
        )
    booking_id = found

    async def act(view: View) -> Response:
        fields = await inputs.form(view.request)
        back = safe_back(view.request, fields.get("back"), "/admin/reminders")
        if fields.get("confirm") != "yes":
            return view.confirm(
                heading=f"Retry the {kind} reminder of booking #{booking_id}?",
                question="Check the provider's log first: an 'unknown' reminder may already have "
                "reached the customer, and a retry sends it again.",
                action_url=view.url(f"/admin/reminders/{quote(booking_id, safe='')}/{quote(kind, safe='')}/retry"),
                fields={"back": back},
                button="Retry reminder",
                back=back,
                nav="reminders",
            )
        async with view.connection() as conn:
            result = await store.retry_reminder(conn, booking_id, kind, role=view.session.role)
        if not result.ok:
            return view.done(f"The {kind} reminder of booking #{booking_id} was not changed: {result.detail}", back)
        return view.done(f"The {kind} reminder of booking #{booking_id} will be sent on the next tick.", back)

    return await gate.page(request, act, action=True)
