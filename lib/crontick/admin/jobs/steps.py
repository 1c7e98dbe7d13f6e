"""The job page's durable steps (crontick.workflows): each step's name, kind, status and when, a bounded preview of its
result, and what a waiting job waits for."""

from __future__ import annotations

from typing import Any

from crontick.db import query

# The most steps shown, and each result's preview (never the whole value).
STEPS_SHOWN = 200
STEP_PREVIEW_CHARS = 200
# What an admin may cancel (crontick.cancel): a pending job (not yet run, or sleeping), one parked by job.wait_for or
# job.join (a later signal then wakes another waiter), or a running one, asked to stop at its next step.
CANCELLABLE = ("pending", "waiting", "running")


async def add_steps(cur: Any, job: dict[str, Any]) -> None:
    """Add "steps" (oldest first) and "waiting_for" (the wait a waiting job is parked in, else None) to `job`,
    read on the caller's cursor (its read-only transaction)."""
    await cur.execute(query("admin_job_steps"), {"id": job["id"], "preview": STEP_PREVIEW_CHARS, "limit": STEPS_SHOWN})
    job["steps"] = steps = await cur.fetchall()
    waits = [s for s in steps if s["status"] == "waiting"] if job["status"] == "waiting" else []
    job["waiting_for"] = (
        {"step": waits[0]["name"], "event_key": waits[0]["event_key"], "until": waits[0]["wait_until"]}
        if waits
        else None
    )
