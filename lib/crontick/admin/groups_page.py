"""The admin's Groups page (flow control, issue 20): groups that wait and why, each rate limit's use, every
pause; forms that pause or resume a type, group or limit and that cancel or fail a group's pending jobs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import flow_store
from crontick.admin.actions import _confirm, _done
from crontick.admin.pages import panel
from crontick.admin.params import name_problem
from crontick.admin.return_to import safe_back
from crontick.admin.view import View, error, form, gate

VERBS = {"pause", "resume", "cancel", "fail"}


async def _rows(conn: Any, after: str | None) -> dict[str, Any]:
    found, cursor = await flow_store.groups(conn, after=after)
    return {
        "groups": found,
        "next_cursor": cursor,
        "rate_limits": await flow_store.rate_limits(conn),
        "pauses": await flow_store.pauses(conn),
    }


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


async def groups(request: Request) -> Response:
    async def build(view: View) -> Response:
        after = view.request.query_params.get("cursor") or None
        if after is not None and name_problem(after):  # not one the page gave: start from the first group
            after = None
        data = await panel(view, lambda conn: _rows(conn, after))
        if data is None:
            data = {"groups": None, "next_cursor": None, "rate_limits": None, "pauses": None}
        elif not view.json:
            for g in data["groups"]:
                g["head"]["run_after_at"] = _instant(g["head"]["run_after"])
            for r in data["rate_limits"]:
                r["reopens"] = _instant(r["reopens_at"])
        return view.page("groups.html", data, title="Groups", nav="groups")

    return await gate(request, build)


async def flow_action(request: Request) -> Response:
    """POST /admin/flow/{verb}: pause or resume (kind, name), or cancel or fail a group's pending jobs (name)."""
    verb = request.path_params["verb"]
    if verb not in VERBS:
        return error(request, 404, "not_found", f"expected one of {', '.join(sorted(VERBS))}, got: {verb[:40]!r}")

    async def act(view: View) -> Response:
        fields = await form(view.request)
        back = safe_back(view.request, fields.get("back"), "/admin/groups")
        kind, name = fields.get("kind", "group"), fields.get("name", "")
        if kind not in flow_store.KINDS or not name:
            return _done(view, "Nothing was changed: expected a type, group or rate limit by name.", back)
        if problem := name_problem(name):
            return error(view.request, 400, "bad_request", f"name: {problem}")
        if verb in ("cancel", "fail"):
            if fields.get("confirm") != "yes":
                return _confirm(
                    view,
                    heading=f"{verb.capitalize()} the pending jobs of group {name}?",
                    question=f"Up to {flow_store.END_CHUNK} of its pending jobs (the newest first) become "
                    f"{flow_store.ENDINGS[verb]} and never run; a running job finishes as it would.",
                    action_url=view.url(f"/admin/flow/{verb}"),
                    fields={"back": back, "kind": "group", "name": name},
                    button=verb.capitalize(),
                    button_class="danger",
                    back=back,
                    nav="groups",
                )
            async with view.connection() as conn:
                result = await flow_store.end_group(conn, name, verb, role=view.session.role)
            row = result.row or {}
            more = " More are pending: run it again." if row.get("more") else ""
            return _done(
                view,
                f"Group {name}: {row.get(flow_store.ENDINGS[verb], 0)} jobs {flow_store.ENDINGS[verb]}.{more}",
                back,
            )
        act_fn = flow_store.pause if verb == "pause" else flow_store.resume
        async with view.connection() as conn:
            result = await act_fn(conn, kind, name, role=view.session.role)
        label = kind.replace("_", " ")
        if not result.ok:
            return _done(view, f"The {label} {name} was not changed: {result.detail}", back)
        return _done(view, f"The {label} {name} is {'paused' if verb == 'pause' else 'running again'}.", back)

    return await gate(request, act, action=True)
