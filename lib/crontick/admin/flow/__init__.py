"""Flow control in the admin (issue 20): the Groups page (groups that wait and why, each rate limit's use, every pause)
with its forms, the same under /api/admin, and their store (also the CLI's: crontick pause, resume, groups)."""

from __future__ import annotations

from starlette.routing import BaseRoute

from crontick.admin import routing
from crontick.admin.routing import CURSOR, LIMIT, ApiRoute, Operation, Param
from crontick.text import KEY_MAX_BYTES

END_CHUNK = 500
ENDINGS = {"cancel": "cancelled", "fail": "failed"}
# The path segment of each kind, its path parameter and its name in crontick_pauses.
SEGMENTS = {"types": ("type", "type"), "groups": ("group_key", "group"), "rate-limits": ("name", "rate_limit")}
# inputs.flow_name: up to KEY_MAX_BYTES bytes of UTF-8. A schema's maxLength counts characters, and no name
# has fewer bytes than characters, so this one is never stricter than the bound (a name within it that is over
# the bound in bytes is a 400).
NAME = {"type": "string", "minLength": 1, "maxLength": KEY_MAX_BYTES}
NAME_NOTE = f"At most {KEY_MAX_BYTES:,} bytes of UTF-8 (the longest group_key); a longer name is a 400."
OBJECT = {"type": "object"}


def routes() -> list[BaseRoute]:
    return [
        *routing.page("/admin/groups", "flow.page:groups"),
        routing.route("/admin/flow/{verb}", "flow.page:flow_action"),
    ]


def api_routes() -> list[ApiRoute]:
    out = [
        routing.api(
            "/api/admin/groups",
            "flow.api:list_groups",
            "GET",
            Operation(
                "Groups with jobs that have not ended, in group_key order: each head and why the group waits "
                "(running, backoff, scheduled, limit_reached, paused, due)",
                (OBJECT, "A page of groups."),
                query=(LIMIT, CURSOR),
            ),
        ),
        routing.api(
            "/api/admin/rate-limits",
            "flow.api:list_rate_limits",
            "GET",
            Operation("Each declared rate limit: count, window, starts in the window, when it reopens", (OBJECT, "")),
        ),
        routing.api(
            "/api/admin/pauses",
            "flow.api:list_pauses",
            "GET",
            Operation("Every pause, newest first", (OBJECT, "Pauses.")),
        ),
    ]
    for segment, (param, kind) in SEGMENTS.items():
        for verb, pausing in (("pause", True), ("resume", False)):
            out.append(
                routing.api(
                    f"/api/admin/{segment}/{{{param}}}/{verb}",
                    f"flow.api:{verb}",
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
    for how, status in ENDINGS.items():
        out.append(
            routing.api(
                f"/api/admin/groups/{{group_key}}/{how}",
                f"flow.api:{how}",
                "POST",
                Operation(
                    f"Make up to {END_CHUNK} of a group's pending jobs {status} (newest first); call again while `more`",
                    (OBJECT, "How many."),
                    path=(Param("group_key", NAME, NAME_NOTE),),
                ),
                write=True,
            )
        )
    return out
