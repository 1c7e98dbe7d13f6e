"""What a verified hook body becomes: the event as JSON, its event id and its dedupe key, or BadEvent (400).

Loaded by crontick.hooks.endpoint with the first hook request. Everything here runs after the
signature verified: the sender is who it claims to be, but what it sent must still be something
PostgreSQL stores and Python reads back, or the answer would be a 500 and the sender would
retry the same body until it gives up.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

from crontick.auth import verifiers
from crontick.errors import CrontickError, Refused
from crontick.text import can_store

MAX_EVENT_ID_CHARS = 500
# Objects and arrays inside one another. Providers' events nest a dozen levels at most; Python's
# json module stops near 1,000 (RecursionError), and the job's payload has to decode again when
# a tick claims it.
MAX_EVENT_DEPTH = 100


class BadEvent(CrontickError):
    """The body verified but cannot become a job (not JSON, no event id where one is required, unstorable)."""


class Parsed(NamedTuple):
    event: Any  # the JSON body, or the form fields as an object
    event_id: str | None  # the dedupe key; None: the sender gave nothing to dedupe on (bearer)
    body_sha256: bytes | None  # a second dedupe key: SHA-256 of a body signed without any id (github)


def parse(verify_kind: str, headers: Mapping[str, str], url: str, body: bytes) -> Parsed:
    """The event, its id and its dedupe keys; BadEvent (with a reason for the sender) if it cannot be a job.

    `headers` looks names up case-insensitively (Starlette's Headers).
    """
    form = not signed_body_hash(url) and (
        verify_kind == "twilio" or headers.get("content-type", "").startswith("application/x-www-form-urlencoded")
    )
    event = _form_object(body) if form else _json(body)
    event_id: str | None
    body_sha256 = None
    if verify_kind == "twilio":
        fields = event if isinstance(event, dict) else {}
        signed = {} if not form else verifiers.form_fields(body)
        event_id = (
            _first_text(fields.get("MessageSid"))
            or _first_text(fields.get("CallSid"))
            or verifiers.twilio_event_key(url, signed)
        )
    elif verify_kind == "stripe":
        stripe_id = event.get("id") if isinstance(event, dict) else None
        if not isinstance(stripe_id, str) or not stripe_id:
            raise BadEvent('expected a Stripe event object with an "id", got: none')
        event_id = stripe_id
    elif verify_kind == "github":
        # GitHub signs the body alone, with no timestamp, and not this header: a captured
        # delivery replayed under a new id (or none) must still be the same event.
        event_id = headers.get("x-github-delivery")
        if not event_id:
            raise BadEvent("expected an X-GitHub-Delivery header (GitHub sends one with every delivery), got: none")
        body_sha256 = hashlib.sha256(body).digest()
    elif verify_kind == "standard":
        event_id = headers.get("webhook-id")
    else:
        event_id = headers.get("idempotency-key")
    if event_id is not None and not 1 <= len(event_id) <= MAX_EVENT_ID_CHARS:
        raise BadEvent(f"expected an event id of 1 to {MAX_EVENT_ID_CHARS} characters, got: {len(event_id)}")
    if event_id is not None and not can_store(event_id):
        raise BadEvent("expected an event id without NUL characters or unpaired surrogates, got one with them")
    check_storable(event)
    return Parsed(event, event_id or None, body_sha256)


def check_storable(value: Any) -> None:
    """BadEvent unless `value` is JSON PostgreSQL's jsonb takes and Python reads back.

    jsonb refuses a string holding NUL (\\u0000) or an unpaired surrogate, and NaN or Infinity
    (which Python's json module reads from `NaN`, `Infinity` or `1e999`); the depth is bounded
    by MAX_EVENT_DEPTH. Walked with a stack, not recursion, so no input can exhaust Python's.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not can_store(item):
                raise BadEvent(
                    "expected JSON text without NUL characters (\\u0000) or unpaired surrogates, got a string with one"
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise BadEvent("expected finite JSON numbers, got NaN or Infinity (or one too large for a double)")
        elif isinstance(item, dict | list):
            if depth > MAX_EVENT_DEPTH:
                raise BadEvent(f"expected JSON nested at most {MAX_EVENT_DEPTH} deep, got deeper")
            if isinstance(item, dict):
                stack.extend((key, depth) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)


def signed_body_hash(url: str) -> bool:
    """Twilio signs a JSON body through the URL's bodySHA256 parameter instead of form fields."""
    return "bodySHA256" in parse_qs(urlsplit(url).query)


def _form_object(body: bytes) -> dict[str, Any]:
    """Form fields as an object; a repeated name becomes a list of its values."""
    try:
        fields = verifiers.form_fields(body)
    except Refused as exc:  # after verification (a bearer hook's form): the sender's mistake, said to it
        raise BadEvent(str(exc)) from None
    return {k: v[0] if len(v) == 1 else v for k, v in fields.items()}


def _json(body: bytes) -> Any:
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except RecursionError:
        raise BadEvent(f"expected JSON nested at most {MAX_EVENT_DEPTH} deep, got far deeper") from None
    except ValueError:
        raise BadEvent(
            "expected a JSON body (or application/x-www-form-urlencoded), got one that does not parse"
        ) from None


def _first_text(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, str) and value else None
