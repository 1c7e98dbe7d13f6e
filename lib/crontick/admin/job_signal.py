"""An admin wakes a waiting job by hand (POST /api/admin/jobs/{id}/signal): as crontick.signal would, with a payload."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from crontick.admin import store
from crontick.admin.tx import action
from crontick.db import query


async def signal_job(conn: store.Conn, job_id: int, *, payload: Any = None, role: str) -> store.ActionResult:
    """A waiting job (job.wait_for) is pending again, due now, and its wait returns `payload`; any other status is a
    conflict. Audited like every action."""
    store._check_role(role)
    async with action(conn, f"signal job {job_id}") as cur:
        lock = await store._locked_job(
            cur, job_id, ("waiting",), "a waiting job", "only a job parked in job.wait_for can be signalled"
        )
        if isinstance(lock, store.ActionResult):
            return lock
        await cur.execute(query("admin_job_signal"), {"id": job_id, "payload": Jsonb(payload)})
        row = await cur.fetchone()
        if row is not None:
            row.pop("woken_steps", None)
        await store.audit(cur, role, "signal_job", {"job_id": job_id}, 1)
    return store.ActionResult(True, row=row)
