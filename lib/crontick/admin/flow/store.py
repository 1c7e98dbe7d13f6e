"""Flow control in the admin (issue 20): pauses, the groups that wait and why, a group's bulk end, the rate limits' use.

Reads and audited writes over sql/flow.sql, shared by the JSON API (crontick.admin.flow.api), the
Groups page (crontick.admin.flow.page) and the CLI (crontick pause, resume, groups).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crontick.admin.audit.store import record
from crontick.admin.flow import END_CHUNK, ENDINGS
from crontick.admin.params import name_problem
from crontick.admin.tx import ActionResult, Conn, Row, action, read
from crontick.db import query
from crontick.errors import CrontickError
from crontick.flow import limits

# What can be paused from here (the schedules' own pause is the schedules page's).
KINDS = {"type": "type", "group": "group", "rate_limit": "rate_limit"}
GROUPS_PAGE = 100
WAITING_CAP = 10_000
__all__ = [
    "END_CHUNK",
    "ENDINGS",
    "GROUPS_PAGE",
    "KINDS",
    "end_group",
    "groups",
    "pause",
    "pauses",
    "rate_limits",
    "resume",
]


def _check(role: str, kind: str, name: str) -> None:
    if role not in ("admin", "cli"):
        raise CrontickError(f"role: expected admin or cli to change flow control, got: {role!r}")
    if kind not in KINDS:
        raise CrontickError(f"kind: expected one of {', '.join(KINDS)}, got: {kind!r}")
    if problem := name_problem(name):
        raise CrontickError(f"name: {problem}")


async def pause(conn: Conn, kind: str, name: str, *, role: str) -> ActionResult:
    """Hold back a job type, a group or a rate limit: its pending jobs stay pending and are not claimed."""
    _check(role, kind, name)
    async with action(conn, f"pause {kind} {name}") as cur:
        await cur.execute(query("flow_pause"), {"kind": kind, "name": name, "by": role})
        row = await cur.fetchone()
        if row is None:
            return ActionResult(False, "conflict", f"expected {kind} {name!r} running, got it paused already")
        await record(cur, role, f"pause_{kind}", {"name": name}, 1)
    return ActionResult(True, row=_paused(row, True))


async def resume(conn: Conn, kind: str, name: str, *, role: str) -> ActionResult:
    _check(role, kind, name)
    async with action(conn, f"resume {kind} {name}") as cur:
        await cur.execute(query("flow_resume"), {"kind": kind, "name": name})
        row = await cur.fetchone()
        if row is None:
            return ActionResult(False, "conflict", f"expected {kind} {name!r} paused, got it running")
        await record(cur, role, f"resume_{kind}", {"name": name}, 1)
    return ActionResult(True, row=_paused(row, False))


def _paused(row: Row, paused: bool) -> Row:
    return {"kind": row["kind"], "name": row["name"], "paused": paused, "paused_at": _iso(row["paused_at"])}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


async def pauses(conn: Conn) -> list[Row]:
    async with read(conn, "pauses") as cur:
        await cur.execute(query("flow_pauses"))
        rows = await cur.fetchall()
    return [{**r, "paused_at": _iso(r["paused_at"])} for r in rows]


async def end_group(conn: Conn, group_key: str, how: str, *, role: str) -> ActionResult:
    """Cancel or fail up to END_CHUNK of a group's pending jobs (newest first); `more` says whether any are left."""
    _check(role, "group", group_key)
    status = ENDINGS.get(how)
    if status is None:
        raise CrontickError(f"how: expected one of {', '.join(ENDINGS)}, got: {how!r}")
    error = f"AdminFailed: failed from the admin ({role}) with the rest of group {group_key[:200]}"
    async with action(conn, f"{how} group {group_key}") as cur:
        params = {"status": status, "error": error, "group": group_key, "chunk": END_CHUNK}
        await cur.execute(query("flow_group_end"), params)
        ended = len(await cur.fetchall())
        await record(cur, role, f"{how}_group", {"group_key": group_key}, ended)
    return ActionResult(True, row={"group_key": group_key, status: ended, "more": ended == END_CHUNK})


def _limit_of(type: str) -> str | None:
    from crontick.jobs import registry

    handler = registry.get(type)
    return handler.rate_limit if handler is not None else None


def _reason(row: Row, paused_limits: set[str], used: dict[str, Row]) -> str:
    """Why a group waits: paused, its head running, in backoff, held by its limit, or due."""
    limit = _limit_of(row["head_type"])
    if row["group_paused"] or row["type_paused"] or limit in paused_limits:
        return "paused"
    if row["head_status"] == "running" or row["running"]:
        return "running"
    if row["head_status"] != "pending":
        return str(row["head_status"])  # waiting on an event (durable steps), or another status of its own
    if row["head_run_after"] > row["as_of"]:
        return "backoff" if row["head_attempts"] else "scheduled"
    state = used.get(limit or "")
    declared = limits.get(limit or "")
    if state is not None and declared is not None and state["used"] >= declared.count:
        return "limit_reached"
    return "due"


async def groups(conn: Conn, *, after: str | None = None, limit: int = GROUPS_PAGE) -> tuple[list[Row], str | None]:
    """Groups with jobs that have not ended, in group_key order: each with its head and why it waits."""
    async with read(conn, "groups") as cur:
        await cur.execute(query("flow_groups"), {"after": after or "", "cap": WAITING_CAP, "limit": limit})
        rows = await cur.fetchall()
    states = {r["name"]: r for r in await rate_limits(conn)}
    paused_limits = {name for name, r in states.items() if r["paused"]}
    out = []
    for r in rows:
        out.append(
            {
                "group_key": r["group_key"],
                "reason": _reason(r, paused_limits, states),
                "running": r["running"],
                "waiting": r["waiting"],
                "paused": bool(r["group_paused"]),
                "head": {
                    "id": r["head_id"],
                    "type": r["head_type"],
                    "status": r["head_status"],
                    "attempts": r["head_attempts"],
                    "max_attempts": r["head_max_attempts"],
                    "run_after": _iso(r["head_run_after"]),
                    "priority": r["head_priority"],
                    "last_error": r["head_error"],
                    "rate_limit": _limit_of(r["head_type"]),
                },
            }
        )
    cursor = out[-1]["group_key"] if len(out) == limit else None
    return out, cursor


async def rate_limits(conn: Conn) -> list[Row]:
    """Each limit declared in this process: its count and window, the starts within the window, when it frees a start."""
    declared = sorted(limits.declared().values(), key=lambda limit: limit.name)
    stored: dict[str, Row] = {}
    paused: set[str] = set()
    async with read(conn, "rate limits") as cur:
        names, seconds = [d.name for d in declared], [d.per_seconds for d in declared]
        await cur.execute(query("flow_rate_limits"), {"names": names, "seconds": seconds})
        stored = {r["name"]: r for r in await cur.fetchall()}
        await cur.execute(query("flow_pauses"))
        paused = {r["name"] for r in await cur.fetchall() if r["kind"] == "rate_limit"}
    out: list[Row] = []
    for d in declared:
        s: dict[str, Any] = stored.get(d.name) or {}
        used = int(s.get("used") or 0)
        out.append(
            {
                "name": d.name,
                "count": d.count,
                "per_seconds": d.per_seconds,
                "used": used,
                "exhausted": used >= d.count,
                "reopens_at": _iso(s.get("frees_at")) if used >= d.count else None,
                "paused": d.name in paused,
            }
        )
    return out
