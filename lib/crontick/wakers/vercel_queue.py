"""`CRONTICK_WAKER=vercel-queue`: a delayed message on a Vercel Queues topic whose subscriber runs the tick.

`POST {VERCEL_QUEUE_BASE_URL}/api/v3/topic/<topic>` (what the `vercel-queue` client sends, without
importing it) with `Vqs-Delay-Seconds` and `Vqs-Idempotency-Key`; a repeated key answers 409:
already booked. No `Vqs-Deployment-Id`: the client sets it from VERCEL_DEPLOYMENT_ID by default,
which pins the message to the deployment that sent it, so a redeploy before the instant would
strand it. The delay is counted from the database's clock (`now`), so the app's own clock never
matters; a message lives 24 hours, so the horizon leaves an hour for the delivery.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from crontick.settings import Settings
from crontick.wakers.base import TICK_EVENT, Booked, WakerError, failure, json_field, send

RETENTION_SECONDS = 86_400  # the Queue API's longest retention; a delay may not exceed it
HORIZON = timedelta(hours=23)
QUEUE_API_PATH = "/api/v3/topic"


class VercelQueue:
    name = "vercel-queue"
    horizon = HORIZON
    granularity_seconds = 1
    min_lead = timedelta(0)

    def __init__(self, settings: Settings) -> None:
        token = settings.vercel_queue_token or settings.vercel_oidc_token
        assert token is not None  # require_waker
        self.token = token
        self.target = settings.vercel_queue_topic
        base = settings.vercel_queue_base_url or f"https://{settings.vercel_region}.vercel-queue.com"
        self.url = f"{base}{QUEUE_API_PATH}/{self.target}"
        self.timeout = settings.wakeup_timeout_seconds

    async def book(self, instant: datetime, key: str, now: datetime) -> Booked:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Vqs-Idempotency-Key": key,
            "Vqs-Delay-Seconds": str(max(0, math.ceil((instant - now).total_seconds()))),
            "Vqs-Retention-Seconds": str(RETENTION_SECONDS),
        }
        body = {**TICK_EVENT, "instant": instant.isoformat()}
        response = await send("POST", self.url, timeout=self.timeout, headers=headers, json=body)
        if response.status_code == 409:  # the idempotency key of this instant was sent before
            return Booked(key, duplicate=True)
        if response.status_code == 202:  # accepted, ingestion deferred: no id yet
            return Booked(None)
        if response.status_code != 201:
            raise failure(response, "Vercel Queues send")
        message_id = json_field(response, "messageId")
        if message_id is None:
            raise WakerError("Vercel Queues send answered 201 without a messageId", retryable=True)
        return Booked(message_id)


def provider(settings: Settings) -> VercelQueue:
    return VercelQueue(settings)
