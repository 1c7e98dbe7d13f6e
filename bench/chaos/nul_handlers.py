"""The CRONTICK_HANDLERS module of chaos scenario 12: a two-step workflow whose steps post each side effect to a local
recorder, and whose bad jobs put a NUL where PostgreSQL cannot store one (a step's result, a step's, sleep's or
wait's name, a wait's event key)."""

from __future__ import annotations

from typing import Any

import httpx

import crontick

# A failed attempt is retried at once (no 1-minute backoff): the scenario counts side effects, not waiting.
RETRY = crontick.Retry((0.2,), jitter_fraction=0)
# Where each bad job puts its NUL; a payload cannot carry one (jsonb refuses it), so the handler makes it.
BAD_KINDS = ("result", "step", "sleep", "wait", "key")

_client: httpx.AsyncClient | None = None


async def _effect(job: crontick.Job, step: str, url: str, result: Any) -> Any:
    """The side effect: one POST to the recorder per call of the step's function (it is not idempotent)."""
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=5)
    r = await _client.post(url, json={"job_id": job.id, "step": step})
    r.raise_for_status()
    return result


@crontick.handler("chaos.nul", retry=RETRY)
async def nul_workflow(payload: Any, job: crontick.Job) -> None:
    bad, url = payload.get("bad"), payload["url"]
    charged = {"declined": "card\x00declined"} if bad == "result" else {"charged": True}
    await job.step("charge", _effect, job, "charge", url, charged)
    if bad == "step":
        await job.step("receipt\x00", _effect, job, "receipt", url, None)
    elif bad == "sleep":
        await job.sleep("cool\x00off", 1)
    elif bad == "wait":
        await job.wait_for("reply\x00", f"reply:{job.id}", timeout_seconds=60)
    elif bad == "key":
        await job.wait_for("reply", f"reply:{job.id}\x00", timeout_seconds=60)
    await job.step("receipt", _effect, job, "receipt", url, {"sent": True})
