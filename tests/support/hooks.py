"""Hooks, a recording handler and signed requests for the inbound and kick tests; importing it declares them
(CRONTICK_HANDLERS=tests.support.hooks does the same in a subprocess)."""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlencode

import httpx

import crontick
from crontick.settings import Settings
from tests.support.constants import TEST_SECRET
from tests.support.credentials import stripe_signature, twilio_signature

PUBLIC_URL = "https://app.example.com"
TWILIO_TOKEN = "twilio-token-for-tests-0123456789ab"
STRIPE_SECRET = "whsec_stripe_secret_for_tests"
GITHUB_SECRET = "It's a Secret to Everybody"
STANDARD_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
BEARER_SECRET = "b" * 40

crontick.inbound("t-twilio", "t_inbound.record", verify="twilio", secret=TWILIO_TOKEN)
crontick.inbound("t-stripe", "t_inbound.record", verify="stripe", secret=STRIPE_SECRET)
crontick.inbound("t-github", "t_inbound.record", verify="github", secret=GITHUB_SECRET)
crontick.inbound("t-standard", "t_inbound.record", verify="standard", secret=STANDARD_SECRET)
crontick.inbound("t-bearer", "t_inbound.record", verify="bearer", secret=BEARER_SECRET)

# What the handler saw: (job id, payload, monotonic start time), across the app's threads.
runs: list[tuple[int, Any, float]] = []
_lock = threading.Lock()


@crontick.handler("t_inbound.record")
async def record(payload: Any, job: crontick.Job) -> None:
    with _lock:
        runs.append((job.id, payload, time.monotonic()))


def settings_for(url: str, **changes: Any) -> Settings:
    return Settings(database_url=url, cron_secret=TEST_SECRET, **{"public_url": PUBLIC_URL, **changes})


def twilio_form(sid: str, body: str = "hello") -> dict[str, str]:
    return {"MessageSid": sid, "From": "whatsapp:+31612345678", "To": "whatsapp:+14155238886", "Body": body}


def twilio_request(
    form: dict[str, str], hook: str = "t-twilio", token: str = TWILIO_TOKEN, public_url: str = PUBLIC_URL
) -> tuple[str, bytes, dict[str, str]]:
    """(path, body, headers) of a webhook as Twilio signs it for `public_url`."""
    path = f"/api/hooks/{hook}"
    signature = twilio_signature(token, public_url + path, form)
    return (
        path,
        urlencode(form).encode(),
        {"X-Twilio-Signature": signature, "Content-Type": "application/x-www-form-urlencoded"},
    )


def twilio_post(
    client: httpx.Client,
    base: str,
    form: dict[str, str],
    hook: str = "t-twilio",
    token: str = TWILIO_TOKEN,
    public_url: str = PUBLIC_URL,
) -> httpx.Response:
    path, body, headers = twilio_request(form, hook, token, public_url)
    return client.post(base + path, content=body, headers=headers)


def stripe_headers(body: bytes, secret: str = STRIPE_SECRET, at: int | None = None) -> dict[str, str]:
    t = int(time.time()) if at is None else at
    return {"Stripe-Signature": stripe_signature(secret, body, t), "Content-Type": "application/json"}
