"""The admin's Groups page (flow control, issue 20): groups that wait and why, each rate limit's use, every
pause; forms that pause or resume a type, group or limit and that cancel or fail a group's pending jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import gate, inputs
from crontick.admin.answer import error, kicking
from crontick.admin.flow import END_CHUNK, ENDINGS, store
from crontick.admin.params import name_problem
from crontick.admin.return_to import safe_back
from crontick.admin.view import View

VERBS = {"pause", "resume", "cancel", "fail"}


async def _rows(conn: Any, after: str | None) -> dict[str, Any]:
    found, cursor = await store.groups(conn, after=after)
    return {
        "groups": found,
        "next_cursor": cursor,
        "rate_limits": await store.rate_limits(conn),
        "pauses": await store.pauses(conn),
    }


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


async def groups(request: Request) -> Response:
    async def build(view: View) -> Response:
        after = view.request.query_params.get("cursor") or None
        if after is not None and name_problem(after):  # not one the page gave: start from the first group
            after = None
        data = await view.panel(lambda conn: _rows(conn, after))
        if data is None:
            data = {"groups": None, "next_cursor": None, "rate_limits": None, "pauses": None}
        elif not view.json:
            for g in data["groups"]:
                g["head"]["run_after_at"] = _instant(g["head"]["run_after"])
            for r in data["rate_limits"]:
                r["reopens"] = _instant(r["reopens_at"])
        return view.page("groups.html", data, title="Groups", nav="groups")

    return await gate.page(request, build)


async def flow_action(request: Request) -> Response:
    """POST /admin/flow/{verb}: pause or resume (kind, name), or cancel or fail a group's pending jobs (name)."""
    verb = request.path_params["verb"]
    if verb not in VERBS:
        return error(request, 404, "not_found", f"expected one of {', '.join(sorted(VERBS))}, got: {verb[:40]!r}")

    async def act(view: View) -> Response:
        fields = await inputs.form(view.request)
        back = safe_back(view.request, fields.get("back"), "/admin/groups")
        kind, name = fields.get("kind", "group"), fields.get("name", "")
        if kind not in store.KINDS or not name:
            return view.done("Nothing was changed: expected a type, group or rate limit by name.", back)
        if problem := name_problem(name):
            return error(view.request, 400, "bad_request", f"name: {problem}")
        if verb in ("cancel", "fail"):
            return await _end_group(view, verb, name, fields.get("confirm") == "yes", back)
        act_fn = store.pause if verb == "pause" else store.resume
        async with view.connection() as conn:
            result = await act_fn(conn, kind, name, role=view.session.role)
        label = kind.replace("_", " ")
        if not result.ok:
            return view.done(f"The {label} {name} was not changed: {result.detail}", back)
        done = view.done(f"The {label} {name} is {'paused' if verb == 'pause' else 'running again'}.", back)
        return kicking(view.request, done) if verb == "resume" else done  # what it held back is due: a tick starts

    return await gate.page(request, act, action=True)


async def _end_group(view: View, verb: str, name: str, confirmed: bool, back: str) -> Response:
    """Confirm, then cancel or fail up to END_CHUNK of the group's pending jobs."""
    if not confirmed:
        return view.confirm(
            heading=f"{verb.capitalize()} the pending jobs of group {name}?",
            question=f"Up to {END_CHUNK} of its pending jobs (the newest first) become "
            f"{ENDINGS[verb]} and never run; a running job finishes as it would.",
            action_url=view.url(f"/admin/flow/{verb}"),
            fields={"back": back, "kind": "group", "name": name},
            button=verb.capitalize(),
            button_class="danger",
            back=back,
            nav="groups",
        )
    async with view.connection() as conn:
        result = await store.end_group(conn, name, verb, role=view.session.role)
    row = result.row or {}
    more = " More are pending: run it again." if row.get("more") else ""
    return view.done(f"Group {name}: {row.get(ENDINGS[verb], 0)} jobs {ENDINGS[verb]}.{more}", back)
