"""The Schedules page (each declared schedule with its last and next slot and its recent decisions) and the schedules'
Enqueue now, Pause and Resume, each behind a confirmation and a 303."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import gate, inputs, params
from crontick.admin.answer import error, kicking
from crontick.admin.return_to import safe_back
from crontick.admin.schedules import store
from crontick.admin.view import View
from crontick.schedules import listing

VERBS = {
    "enqueue": ("Enqueue now", "primary", "enqueue one job of it now, outside its slots (it takes no slot)"),
    "pause": (
        "Pause",
        "danger",
        "pause it: until it is resumed it enqueues nothing, and its slots are recorded as paused",
    ),
    "resume": (
        "Resume",
        "primary",
        "resume it: its next slot runs as usual; the slots missed while paused stay skipped",
    ),
}
ACTS = {"enqueue": store.enqueue_now, "pause": store.pause, "resume": store.resume}


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


async def schedules(request: Request) -> Response:
    async def build(view: View) -> Response:
        rows = await view.panel(store.listing_rows)
        items = None if rows is None else listing.build_listing(rows[0], rows[1], view.now, rows[2])
        if view.json:
            return view.page("schedules.html", {"schedules": items}, title="Schedules", nav="schedules")
        for item in items or []:
            item["last_at"], item["next_at"] = _instant(item["last_slot"]), _instant(item["next_slot"])
            for d in item["recent"]:
                d["slot_at"], d["last_at"] = _instant(d["slot"]), _instant(d["last_slot"])
        return view.page("schedules.html", {"schedules": items}, title="Schedules", nav="schedules")

    return await gate.page(request, build)


async def schedule_action(request: Request) -> Response:
    name, verb = request.path_params["name"], request.path_params["verb"]
    if verb not in VERBS or len(name) > 200 or not params.storable(name):
        return error(
            request,
            404,
            "not_found",
            f"expected a schedule and one of {', '.join(VERBS)}, got: {params.shown(name)} and {params.shown(verb)}",
        )

    async def act(view: View) -> Response:
        fields = await inputs.form(view.request)
        back = safe_back(view.request, fields.get("back"), "/admin/schedules")
        label, style, what = VERBS[verb]
        if fields.get("confirm") != "yes":
            return view.confirm(
                heading=f"{label}: schedule {name}?",
                question=f"This will {what}.",
                action_url=view.url(f"/admin/schedules/{quote(name, safe='')}/{verb}"),
                fields={"back": back},
                button=label,
                button_class=style,
                back=back,
                nav="schedules",
            )
        async with view.connection() as conn:
            result = await ACTS[verb](conn, name, role=view.session.role)
        if not result.ok:
            return view.done(f"Schedule {name} was not changed: {result.detail}", back)
        row = result.row or {}
        message = {
            "enqueue": f"Enqueued job #{row.get('job_id')} for schedule {name}, outside its slots.",
            "pause": f"Schedule {name} is paused: its slots are recorded as skipped (paused).",
            "resume": f"Schedule {name} is resumed ({row.get('skipped_slots', 0)} slot(s) missed while paused).",
        }[verb]
        done = view.done(message, back)
        return kicking(view.request, done) if verb == "enqueue" else done  # run now: a tick starts once answered

    return await gate.page(request, act, action=True)
