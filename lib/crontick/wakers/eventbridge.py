"""`CRONTICK_WAKER=eventbridge`: an EventBridge Scheduler one-time schedule that invokes this app's Lambda.

`CreateSchedule` (`POST /schedules/<name>`, signed with SigV4 by crontick.wakers.sigv4, no boto3)
with `at(<UTC instant>)`, `ScheduleExpressionTimezone: UTC`, `FlexibleTimeWindow: OFF`,
`ActionAfterCompletion: DELETE` and the target's Input `{"crontick": "tick", "instant": ...}`, which
crontick.aws runs as a tick. The schedule's name holds the instant, so a repeat answers ConflictException (409):
already booked. Minute precision (it fires within its minute); a past `at()` is refused, hence the lead.
A superseded booking is cancelled with `DeleteSchedule` (`DELETE /schedules/<name>?groupName=<group>`, signed
the same way); 404 ResourceNotFoundException: it fired (and deleted itself) already.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from crontick.settings import Settings
from crontick.wakers import sigv4
from crontick.wakers.base import Booked, failure, json_field, send, tick_body

HORIZON = timedelta(days=365)  # no cap of its own; a year keeps the instant sane


class EventBridge:
    name = "eventbridge"
    horizon = HORIZON
    granularity_seconds = 60
    min_lead = timedelta(seconds=10)  # `at()` must be in the future when the call arrives

    def __init__(self, settings: Settings) -> None:
        assert settings.aws_region and settings.eventbridge_target_arn and settings.eventbridge_role_arn
        assert settings.aws_access_key_id and settings.aws_secret_access_key  # require_waker
        self.region = settings.aws_region
        self.target = settings.eventbridge_target_arn
        self.role = settings.eventbridge_role_arn
        self.group = settings.eventbridge_group
        self.endpoint = settings.eventbridge_url or f"https://scheduler.{self.region}.amazonaws.com"
        self.credentials = sigv4.Credentials(
            settings.aws_access_key_id, settings.aws_secret_access_key, settings.aws_session_token
        )
        self.timeout = settings.wakeup_timeout_seconds

    def request(self, instant: datetime, key: str) -> tuple[str, bytes]:
        """CreateSchedule's URL and JSON body for one instant."""
        body = {
            "GroupName": self.group,
            "ScheduleExpression": f"at({instant.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')})",
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "ActionAfterCompletion": "DELETE",
            "Description": f"crontick: one tick at {instant.isoformat()}",
            "Target": {"Arn": self.target, "RoleArn": self.role, "Input": tick_body(instant).decode()},
        }
        return f"{self.endpoint}/schedules/{key}", json.dumps(body).encode()

    async def book(self, instant: datetime, key: str, now: datetime) -> Booked:
        url, body = self.request(instant, key)
        headers = sigv4.signed_headers(
            "POST", url, {"Content-Type": "application/json"}, body, region=self.region, service="scheduler",
            credentials=self.credentials, now=datetime.now(UTC),
        )  # fmt: skip
        response = await send("POST", url, timeout=self.timeout, headers=headers, content=body)
        if response.status_code == 409:  # ConflictException: the schedule of this instant exists
            return Booked(key, duplicate=True)
        if response.status_code != 200:
            raise failure(response, "EventBridge Scheduler CreateSchedule")
        return Booked(json_field(response, "ScheduleArn") or key)

    async def cancel(self, key: str, message_id: str | None) -> None:
        """DeleteSchedule of the schedule named `key`; 404 (fired and deleted already, or never made) is no failure."""
        url = f"{self.endpoint}/schedules/{key}?{urlencode({'groupName': self.group})}"
        headers = sigv4.signed_headers(
            "DELETE", url, {}, b"", region=self.region, service="scheduler",
            credentials=self.credentials, now=datetime.now(UTC),
        )  # fmt: skip
        response = await send("DELETE", url, timeout=self.timeout, headers=headers)
        if response.status_code not in (200, 404):
            raise failure(response, "EventBridge Scheduler DeleteSchedule")


def provider(settings: Settings) -> EventBridge:
    return EventBridge(settings)
