"""`CRONTICK_WAKER=qstash`: Upstash QStash's publish with `Upstash-Not-Before` and `Upstash-Deduplication-Id`.

`POST {QSTASH_URL}/v2/publish/{CRONTICK_PUBLIC_URL}/api/cron/tick`; the delivery arrives as a POST
signed with `Upstash-Signature`, which the tick accepts like any QStash call. QStash answers 202
with the existing message id for a duplicate within its 10-minute window; crontick's own table
(crontick_wakeups) remembers bookings beyond that.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from crontick.settings import Settings
from crontick.wakers.base import TICK_PATH, Booked, WakerError, failure, json_field, send, tick_body

# The free plan's cap on a delay (pay-as-you-go: a year); beyond it, the booking is at 7 days.
HORIZON = timedelta(days=7)


class QStash:
    name = "qstash"
    horizon = HORIZON
    granularity_seconds = 1
    min_lead = timedelta(0)

    def __init__(self, settings: Settings) -> None:
        assert settings.public_url is not None and settings.qstash_token is not None  # require_waker
        self.target = settings.public_url + TICK_PATH
        self.api = settings.qstash_url
        self.token = settings.qstash_token
        self.timeout = settings.wakeup_timeout_seconds

    async def book(self, instant: datetime, key: str, now: datetime) -> Booked:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Upstash-Method": "POST",
            "Upstash-Not-Before": str(int(instant.timestamp())),
            "Upstash-Deduplication-Id": key,
        }
        response = await send(
            "POST", f"{self.api}/v2/publish/{self.target}", timeout=self.timeout, headers=headers,
            content=tick_body(instant),
        )  # fmt: skip
        if response.status_code not in (200, 201, 202):
            raise failure(response, "QStash publish")
        message_id = json_field(response, "messageId")
        if message_id is None:
            raise WakerError(f"QStash publish answered {response.status_code} without a messageId", retryable=True)
        return Booked(message_id, duplicate=response.status_code == 202)

    async def cancel(self, key: str, message_id: str | None) -> None:
        """`DELETE {QSTASH_URL}/v2/messages/{messageId}`; 404: delivered or gone already."""
        if message_id is None:
            raise WakerError(f"expected the QStash messageId of {key}, got none", retryable=False)
        headers = {"Authorization": f"Bearer {self.token}"}
        response = await send("DELETE", f"{self.api}/v2/messages/{message_id}", timeout=self.timeout, headers=headers)
        if response.status_code not in (200, 202, 204, 404):
            raise failure(response, "QStash cancel")


def provider(settings: Settings) -> QStash:
    return QStash(settings)
