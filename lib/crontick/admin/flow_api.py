"""Flow control's JSON admin routes (issue 20): pause and resume a type, a group or a rate limit; the groups
that wait and why; each rate limit's use; a group's pending jobs cancelled or failed in chunks."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from crontick.admin import api_input, flow_store
from crontick.admin.guard import Handler, answer, error, guarded_route
from crontick.admin.operation import ApiRoute, Operation, Param
from crontick.admin.store import ActionResult, Conn
from crontick.text import KEY_MAX_BYTES

TEXT = {"type": "string"}
# api_input.flow_name: up to KEY_MAX_BYTES bytes of UTF-8. A schema's maxLength counts characters, and no name
# has fewer bytes than characters, so this one is never stricter than the bound (a name within it that is over
# the bound in bytes is a 400).
NAME = {"type": "string", "minLength": 1, "maxLength": KEY_MAX_BYTES}
NAME_NOTE = f"At most {KEY_MAX_BYTES:,} bytes of UTF-8 (the longest group_key); a longer name is a 400."
OBJECT = {"type": "object"}
# The path segment of each kind, and its name in crontick_pauses.
KINDS = {"types": ("type", "type"), "groups": ("group_key", "group"), "rate-limits": ("name", "rate_limit")}


def _answered(result: ActionResult) -> Response:
    if not result.ok:
        return error(409 if result.error == "conflict" else 404, result.error or "conflict", result.detail)
    return answer(result.row)


def _name(request: Request, param: str) -> str:
    return api_input.flow_name(request.path_params[param], param)


def _toggle(segment: str, pausing: bool) -> Handler:
    param, kind = KINDS[segment]

    async def handler(request: Request, conn: Conn, role: str) -> Response:
        act = flow_store.pause if pausing else flow_store.resume
        return _answered(await act(conn, kind, _name(request, param), role=role))

    return handler


def _end_group(how: str) -> Handler:
    async def handler(request: Request, conn: Conn, role: str) -> Response:
        return _answered(await flow_store.end_group(conn, _name(request, "group_key"), how, role=role))

    return handler


async def list_groups(request: Request, conn: Conn, role: str) -> Response:
    q = request.query_params
    limit = api_input.limit(q)
    given = q.get("cursor")  # the last group_key of a page
    after = api_input.flow_name(given, "cursor") if given else None
    rows, cursor = await flow_store.groups(conn, after=after, limit=limit)
    return answer({"groups": rows, "next_cursor": cursor})


async def list_rate_limits(request: Request, conn: Conn, role: str) -> Response:
    return answer({"rate_limits": await flow_store.rate_limits(conn)})


async def list_pauses(request: Request, conn: Conn, role: str) -> Response:
    return answer({"pauses": await flow_store.pauses(conn)})


def routes(limit: Param, cursor: Param) -> list[ApiRoute]:
    """The routes, for crontick.admin.api.routes() to add to the API (and its OpenAPI document)."""
    out = [
        guarded_route(
            "/api/admin/groups",
            list_groups,
            "GET",
            Operation(
                "Groups with jobs that have not ended, in group_key order: each head and why the group waits "
                "(running, backoff, scheduled, limit_reached, paused, due)",
                (OBJECT, "A page of groups."),
                query=(limit, Param("cursor", TEXT, "The `next_cursor` of the previous page.")),
            ),
        ),
        guarded_route(
            "/api/admin/rate-limits",
            list_rate_limits,
            "GET",
            Operation("Each declared rate limit: count, window, starts in the window, when it reopens", (OBJECT, "")),
        ),
        guarded_route(
            "/api/admin/pauses", list_pauses, "GET", Operation("Every pause, newest first", (OBJECT, "Pauses."))
        ),
    ]
    for segment, (param, kind) in KINDS.items():
        for verb, pausing in (("pause", True), ("resume", False)):
            out.append(
                guarded_route(
                    f"/api/admin/{segment}/{{{param}}}/{verb}",
                    _toggle(segment, pausing),
                    "POST",
                    Operation(
                        f"{verb.capitalize()} a {kind.replace('_', ' ')}: "
                        + ("its pending jobs stay pending and are not claimed" if pausing else "claimed again"),
                        (OBJECT, "The pause."),
                        errors=(409,),
                        path=(Param(param, NAME, NAME_NOTE),),
                    ),
                    write=True,
                )
            )
    for how, status in flow_store.ENDINGS.items():
        out.append(
            guarded_route(
                f"/api/admin/groups/{{group_key}}/{how}",
                _end_group(how),
                "POST",
                Operation(
                    f"Make up to {flow_store.END_CHUNK} of a group's pending jobs {status} (newest first); "
                    "call again while `more`",
                    (OBJECT, "How many."),
                    path=(Param("group_key", NAME, NAME_NOTE),),
                ),
                write=True,
            )
        )
    return out
