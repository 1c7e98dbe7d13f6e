"""POST /api/hooks/{name}: verify an inbound webhook over its raw body, record it and its job, answer.

Loaded by the first hook request, not at startup: a cold start that serves a tick never needs the
verifiers. The declarations live in crontick.inbound.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.types.json import Jsonb

from . import cutoff, http_body, logs, verify
from .db import query
from .errors import CrontickError, DatabaseUnavailable
from .inbound import Hook, find

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    from .app import Runtime

MAX_EVENT_ID_CHARS = 500
RETRY_AFTER_SECONDS = 30
TWIML_EMPTY = "<Response></Response>"


class BadEvent(CrontickError):
    """The body verified but cannot become a job (not JSON, no event id where one is required)."""


def _error(status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


async def endpoint(request: Request) -> Response:
    """POST /api/hooks/{name}: verify over the raw body, record the event and its job in one statement, answer."""
    from starlette.background import BackgroundTask
    from starlette.responses import JSONResponse, Response

    rt: Runtime = request.app.state.runtime
    if rt.problem or rt.db is None:
        return http_body.misconfigured()  # the detail is in the log; the caller may be anyone
    name = request.path_params["name"]
    hook = find(name)
    if hook is None:
        return _error(
            404, "unknown_hook", f"no inbound hook named {name!r} is declared; declare it with crontick.inbound()"
        )
    limit = rt.settings.max_body_bytes
    try:
        body = await http_body.read_body_capped(request, limit)
    except http_body.BodyTooLarge:
        return http_body.too_large(limit)
    url = _public_url(request, rt)
    try:
        check(hook, request, url, body, time.time())
    except verify.Refused as exc:
        logs.warning(
            "inbound_refused", hook=name, reason=str(exc), client=request.client.host if request.client else "?"
        )
        return _error(401, "unauthorized", f"a valid {hook.verify} signature is required for this hook")
    try:
        event, event_id = parse(hook, request, url, body)
    except BadEvent as exc:
        return _error(400, "bad_event", str(exc))
    payload = {"hook": name, "event_id": event_id, "received_at": datetime.now(UTC).isoformat(), "event": event}
    try:
        async with cutoff.bounded(rt.db, cutoff.cutoff_of(rt.settings)):
            job_id, new = await record(rt, hook, event_id, payload)
    except DatabaseUnavailable as exc:
        await cutoff.discard_after(rt.db, exc)
        logs.error("database_unavailable", detail=str(exc), hook=name)
        return _error(
            503,
            "database_unavailable",
            "the database cannot be reached; nothing was recorded, send the event again later",
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    except psycopg.errors.UndefinedTable:
        logs.error("misconfigured", detail="crontick_inbound_events is missing", hook=name)
        return _error(
            503,
            "misconfigured",
            "the crontick tables are missing or out of date: run `crontick migrate` against DATABASE_URL",
        )
    logs.info("inbound", hook=name, event_id=event_id, job_id=job_id, duplicate=not new)
    background = BackgroundTask(_kick, rt) if new else None
    if hook.verify == "twilio":
        return Response(TWIML_EMPTY, media_type="text/xml", background=background)
    return JSONResponse({"ok": True, "job_id": job_id, "duplicate": not new}, background=background)


async def _kick(rt: Runtime) -> None:
    from .kick import after_commit

    await after_commit(rt)


def _public_url(request: Request, rt: Runtime) -> str:
    """The URL the sender called: CRONTICK_PUBLIC_URL (or the forwarded origin) + path + query."""
    from .auth import credentials

    return credentials(request, b"", rt.settings).url


def check(hook: Hook, request: Request, url: str, body: bytes, now: float) -> None:
    """Run the hook's verifier; raises verify.Refused with the reason."""
    h = request.headers
    if hook.verify == "twilio":
        fields = {} if _signed_body_hash(url) else verify.form_fields(body)
        verify.twilio(
            hook.secret,
            url,
            fields,
            h.get("x-twilio-signature"),
            body,
            settings_header=h.get("x-twilio-webhooks-signature-settings"),
        )
    elif hook.verify == "stripe":
        verify.stripe(hook.secret, h.get("stripe-signature"), body, now)
    elif hook.verify == "github":
        verify.github(hook.secret, h.get("x-hub-signature-256"), body)
    elif hook.verify == "standard":
        verify.standard(
            hook.secret, h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature"), body, now
        )
    else:
        verify.bearer(hook.secret, h.get("authorization"))


def parse(hook: Hook, request: Request, url: str, body: bytes) -> tuple[Any, str | None]:
    """(the event as JSON, its provider event id or None when the sender gave none)."""
    h = request.headers
    form = not _signed_body_hash(url) and (
        hook.verify == "twilio" or h.get("content-type", "").startswith("application/x-www-form-urlencoded")
    )
    event = _form_object(body) if form else _json(body)
    if hook.verify == "twilio":
        fields = event if isinstance(event, dict) else {}
        event_id = (
            _first_text(fields.get("MessageSid"))
            or _first_text(fields.get("CallSid"))
            or h.get("i-twilio-idempotency-token")
        )
    elif hook.verify == "stripe":
        event_id = event.get("id") if isinstance(event, dict) else None
        if not isinstance(event_id, str) or not event_id:
            raise BadEvent('expected a Stripe event object with an "id", got: none')
    elif hook.verify == "github":
        event_id = h.get("x-github-delivery")
    elif hook.verify == "standard":
        event_id = h.get("webhook-id")
    else:
        event_id = h.get("idempotency-key")
    if event_id is not None and not 1 <= len(event_id) <= MAX_EVENT_ID_CHARS:
        raise BadEvent(f"expected an event id of 1 to {MAX_EVENT_ID_CHARS} characters, got: {len(event_id)}")
    return event, event_id or None


def _signed_body_hash(url: str) -> bool:
    """Twilio signs a JSON body through the URL's bodySHA256 parameter instead of form fields."""
    from urllib.parse import parse_qs, urlsplit

    return "bodySHA256" in parse_qs(urlsplit(url).query)


def _form_object(body: bytes) -> dict[str, Any]:
    """Form fields as an object; a repeated name becomes a list of its values."""
    return {k: v[0] if len(v) == 1 else v for k, v in verify.form_fields(body).items()}


def _json(body: bytes) -> Any:
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except ValueError:
        raise BadEvent(
            "expected a JSON body (or application/x-www-form-urlencoded), got one that does not parse"
        ) from None


def _first_text(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, str) and value else None


async def record(rt: Runtime, hook: Hook, event_id: str | None, payload: dict[str, Any]) -> tuple[int, bool]:
    """Record the event and enqueue its job in one statement; (job id, whether it is new)."""
    from .queue import enqueue

    assert rt.db is not None
    try:
        conn = await rt.db.connection()
        if event_id is None:  # nothing to dedupe on (a bearer sender without Idempotency-Key)
            return int(await enqueue(conn, hook.job_type, payload)), True
        params = {
            "hook": hook.name,
            "event_id": event_id,
            "received_at": payload["received_at"],
            "type": hook.job_type,
            "payload": Jsonb(payload),
        }
        for _ in range(2):  # the second run sees a concurrent twin's row that the first one waited for
            cur = await conn.execute(query("inbound_event_record"), params)
            row = await cur.fetchone()
            if row is not None:
                return int(row[0]), bool(row[1])
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc
    raise CrontickError(f"inbound hook {hook.name!r}: expected a job id for event {event_id!r}, got none")
