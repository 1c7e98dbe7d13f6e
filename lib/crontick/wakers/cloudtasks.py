"""`CRONTICK_WAKER=cloudtasks`: a named Google Cloud Tasks task with `scheduleTime` that POSTs this app's tick.

`POST {CRONTICK_CLOUDTASKS_URL}/v2/projects/P/locations/L/queues/Q/tasks` (the REST API: no Google
library), authorised with the host's access token from the metadata server. The task's name holds
the instant, so a repeat answers 409 ALREADY_EXISTS: already booked. Its `oidcToken` makes Cloud
Tasks sign each call with a Google ID token for the service account, which the tick accepts with
CRONTICK_GOOGLE_OIDC_EMAILS and CRONTICK_GOOGLE_OIDC_AUDIENCE (crontick.auth.google). A superseded booking is
cancelled with DeleteTask (`DELETE {CRONTICK_CLOUDTASKS_URL}/v2/<queue>/tasks/<key>`); 404: run or gone already.
Cloud Tasks refuses a deleted task's name for a while, so an instant booked again after a cancel is a new key
(crontick.wakers.booking.booking_key's generation).
"""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime, timedelta

from crontick.settings import Settings
from crontick.wakers.base import TICK_PATH, Booked, WakerError, failure, json_field, send, tick_body

HORIZON = timedelta(days=30)  # Cloud Tasks' furthest scheduleTime
METADATA_ACCESS_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
# An access token is used until this long before it expires (they live an hour).
TOKEN_MARGIN_SECONDS = 60.0

# Per metadata server: (access token, monotonic time it stops being used).
_tokens: dict[str, tuple[str, float]] = {}


class CloudTasks:
    name = "cloudtasks"
    horizon = HORIZON
    granularity_seconds = 1
    min_lead = timedelta(0)

    def __init__(self, settings: Settings) -> None:
        assert settings.public_url and settings.cloudtasks_service_account  # require_waker
        self.target = settings.public_url + TICK_PATH
        self.queue = (
            f"projects/{settings.cloudtasks_project}/locations/{settings.cloudtasks_location}"
            f"/queues/{settings.cloudtasks_queue}"
        )
        self.api = settings.cloudtasks_url
        self.metadata = settings.gcp_metadata_url
        self.account = settings.cloudtasks_service_account
        self.audience = settings.google_oidc_audience or self.target
        self.timeout = settings.wakeup_timeout_seconds

    def task(self, instant: datetime, key: str) -> dict[str, object]:
        """The CreateTask body for one instant."""
        return {
            "task": {
                "name": f"{self.queue}/tasks/{key}",
                "scheduleTime": instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "httpRequest": {
                    "url": self.target,
                    "httpMethod": "POST",
                    "headers": {"Content-Type": "application/json"},
                    "body": base64.b64encode(tick_body(instant)).decode(),
                    "oidcToken": {"serviceAccountEmail": self.account, "audience": self.audience},
                },
            }
        }

    async def book(self, instant: datetime, key: str, now: datetime) -> Booked:
        headers = {"Authorization": f"Bearer {await self.access_token()}"}
        url = f"{self.api}/v2/{self.queue}/tasks"
        response = await send("POST", url, timeout=self.timeout, headers=headers, json=self.task(instant, key))
        if response.status_code == 409:  # ALREADY_EXISTS: the task of this instant exists
            return Booked(key, duplicate=True)
        if response.status_code != 200:
            raise failure(response, "Cloud Tasks CreateTask")
        return Booked(json_field(response, "name") or key)

    async def cancel(self, key: str, message_id: str | None) -> None:
        """DeleteTask of the task named `key`; 404 (dispatched and gone already, or never made) is no failure."""
        headers = {"Authorization": f"Bearer {await self.access_token()}"}
        url = f"{self.api}/v2/{self.queue}/tasks/{key}"
        response = await send("DELETE", url, timeout=self.timeout, headers=headers)
        if response.status_code not in (200, 404):
            raise failure(response, "Cloud Tasks DeleteTask")

    async def access_token(self) -> str:
        """The host's access token (Cloud Run's, a VM's): from the metadata server, kept until shortly before it expires."""
        cached = _tokens.get(self.metadata)
        if cached and time.monotonic() < cached[1]:
            return cached[0]
        response = await send("GET", self.metadata + METADATA_ACCESS_PATH, timeout=self.timeout,
                              headers={"Metadata-Flavor": "Google"})  # fmt: skip
        if response.status_code != 200:
            raise failure(response, "the metadata server's token")
        token = json_field(response, "access_token")
        expires = json_field(response, "expires_in")
        if not token or not expires or not expires.isdigit():
            raise WakerError("the metadata server's token answer has no access_token or expires_in", retryable=True)
        _tokens[self.metadata] = (token, time.monotonic() + int(expires) - TOKEN_MARGIN_SECONDS)
        return token


def provider(settings: Settings) -> CloudTasks:
    return CloudTasks(settings)
