"""POST /api/hooks/{name}: verify an inbound webhook over its raw body, record it and its job, answer.

Loaded by the first hook request, not at startup: a cold start that serves a tick never needs the
verifiers. The declarations live in crontick.inbound.
"""

from __future__ import annotations

import ipaddress
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import psycopg
from psycopg.types.json import Jsonb

from crontick import logs, tracing
from crontick.auth import verifiers
from crontick.db import cutoff, query
from crontick.errors import CrontickError, DatabaseUnavailable, Refused
from crontick.hooks.event import BadEvent, parse, signed_body_hash
from crontick.hooks.inbound import Flow, Hook, find
from crontick.http import body as http_body

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    from crontick.runtime import Runtime
    from crontick.settings import Settings

RETRY_AFTER_SECONDS = 30
TWIML_EMPTY = "<Response></Response>"
# Per verifier, a tighter cap than CRONTICK_MAX_BODY_BYTES: Twilio posts small forms (the
# longest WhatsApp message, 4,096 characters, percent-encodes to at most 48 KiB even if each is
# an emoji), and its form is split before the signature can be checked.
MAX_BODY_BYTES = {"twilio": 64 * 1024}
# The whole body must arrive within this (from the first read): a sender trickling bytes holds
# the connection no longer. Twilio waits 15 s for the whole exchange and GitHub 10 s.
BODY_READ_SECONDS = 10.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEBOUNCE_PARAMS = ("debounce_key", "debounce_seconds", "debounce_max_seconds")


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
    url = _public_url(request, rt)
    body = await _verified_body(request, rt, hook, url)
    if not isinstance(body, bytes):
        return body
    try:
        event, event_id, body_sha256 = parse(hook.verify, request.headers, url, body)
    except BadEvent as exc:
        logs.warning("inbound_bad_event", hook=name, reason=str(exc))
        return _error(400, "bad_event", str(exc))
    payload = {"hook": name, "event_id": event_id, "received_at": datetime.now(UTC).isoformat(), "event": event}
    with tracing.inbound(request.headers.get("traceparent")):  # the sender's trace, kept with the job while tracing
        recorded = await _recorded(rt, hook, event_id, payload, body_sha256)
    if not isinstance(recorded, tuple):
        return recorded
    job_id, new = recorded
    logs.info("inbound", hook=name, event_id=event_id, job_id=job_id, duplicate=not new)
    background = BackgroundTask(_kick, rt) if new else None
    if hook.verify == "twilio":
        return Response(TWIML_EMPTY, media_type="text/xml", background=background)
    return JSONResponse({"ok": True, "job_id": job_id, "duplicate": not new}, background=background)


async def _verified_body(request: Request, rt: Runtime, hook: Hook, url: str) -> bytes | Response:
    """The raw body once its signature verified, or the answer that refuses it.

    What costs nothing is checked before a byte is read: the URL a Twilio signature names, the
    headers the verifier needs, a bearer secret in full. The body is then read under the hook's
    cap and a deadline, and verified.
    """
    if hook.verify == "twilio" and not trusted_url(rt.settings, request.client.host if request.client else "", url):
        logs.error("misconfigured", hook=hook.name, detail=UNTRUSTED_URL)
        return http_body.misconfigured()
    try:
        verifiers.signature_headers_present(hook.verify, request.headers)
        if hook.verify == "bearer":
            verifiers.bearer(hook.secret, request.headers.get("authorization"))
    except Refused as exc:
        return _refused(request, hook, exc)
    limit = min(rt.settings.max_body_bytes, MAX_BODY_BYTES.get(hook.verify, rt.settings.max_body_bytes))
    try:
        body = await http_body.read_body_capped(request, limit, seconds=BODY_READ_SECONDS)
    except http_body.BodyTooLarge:
        if limit < rt.settings.max_body_bytes:
            return _error(
                413,
                "body_too_large",
                f"a {hook.verify} hook reads at most {limit} bytes of body; send less",
                {"Connection": "close"},
            )
        return http_body.too_large(limit)
    except http_body.BodyTimeout:
        return _error(
            408,
            "body_timeout",
            f"the request body did not arrive within {BODY_READ_SECONDS:g} s; send it again",
            {"Connection": "close"},
        )
    try:
        check(hook, request, url, body, time.time())
    except Refused as exc:
        return _refused(request, hook, exc)
    return body


async def _recorded(
    rt: Runtime, hook: Hook, event_id: str | None, payload: dict[str, Any], body_sha256: bytes | None
) -> tuple[int, bool] | Response:
    """record() within the request's cut-off: (job id, new), or the answer when the database could not take it."""
    assert rt.db is not None
    try:
        async with cutoff.bounded(rt.db, cutoff.cutoff_of(rt.settings)):
            return await record(rt, hook, event_id, payload, body_sha256=body_sha256)
    except DatabaseUnavailable as exc:
        await cutoff.discard_after(rt.db, exc)
        logs.error("database_unavailable", detail=str(exc), hook=hook.name)
        return _error(
            503,
            "database_unavailable",
            "the database cannot be reached; nothing was recorded, send the event again later",
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
        logs.error("misconfigured", detail="crontick_inbound_events is missing or out of date", hook=hook.name)
        return _error(
            503,
            "misconfigured",
            "the crontick tables are missing or out of date: run `crontick migrate` against DATABASE_URL",
        )
    except psycopg.DataError as exc:  # what the checks in crontick.hooks.event did not foresee: still not a 500
        reason = (str(exc).splitlines() or [""])[0]
        logs.error("inbound_bad_event", hook=hook.name, reason=f"{type(exc).__name__}: {reason}")
        return _error(400, "bad_event", f"the database cannot store this event ({type(exc).__name__})")


UNTRUSTED_URL = (
    "CRONTICK_PUBLIC_URL: expected the base URL Twilio calls (such as https://app.example.com) for a twilio "
    "hook, got: nothing (or set CRONTICK_TRUST_FORWARDED=1 when a proxy you control sets X-Forwarded-Host and "
    "X-Forwarded-Proto); without it the request's Host header would choose the URL the signature is checked "
    "against, so a request signed for another deployment would verify here. Only loopback requests to a "
    "loopback URL (crontick dev) are served without it"
)


def trusted_url(settings: Settings, client: str, url: str) -> bool:
    """Whether `url` (what a Twilio signature is checked against) is the operator's, not the caller's, choice.

    Twilio signs the URL it called and nothing that says when: the URL is the only thing that
    ties a signature to this deployment. It is trusted when it comes from CRONTICK_PUBLIC_URL or
    from a proxy the operator vouches for (CRONTICK_TRUST_FORWARDED, as for QStash); else only
    for a request from loopback that names a loopback host (`crontick dev`, a test).
    """
    if settings.public_url or settings.trust_forwarded:
        return True
    try:
        local = ipaddress.ip_address(client).is_loopback
    except ValueError:
        return False
    return local and urlsplit(url).hostname in LOOPBACK_HOSTS


def _refused(request: Request, hook: Hook, exc: Refused) -> JSONResponse:
    logs.warning(
        "inbound_refused", hook=hook.name, reason=str(exc), client=request.client.host if request.client else "?"
    )
    return _error(401, "unauthorized", f"a valid {hook.verify} signature is required for this hook")


async def _kick(rt: Runtime) -> None:
    from crontick.hooks.kick import after_commit

    await after_commit(rt)


def _public_url(request: Request, rt: Runtime) -> str:
    """The URL the sender called: CRONTICK_PUBLIC_URL (or the forwarded origin and the mount prefix) + the path
    inside crontick + query."""
    from crontick.auth.tick import credentials

    return credentials(request, b"", rt.settings).url


def check(hook: Hook, request: Request, url: str, body: bytes, now: float) -> None:
    """Run the hook's verifier; raises Refused with the reason."""
    h = request.headers
    if hook.verify == "twilio":
        fields = {} if signed_body_hash(url) else verifiers.form_fields(body)
        verifiers.twilio(
            hook.secret,
            url,
            fields,
            h.get("x-twilio-signature"),
            body,
            settings_header=h.get("x-twilio-webhooks-signature-settings"),
        )
    elif hook.verify == "stripe":
        verifiers.stripe(hook.secret, h.get("stripe-signature"), body, now)
    elif hook.verify == "github":
        verifiers.github(hook.secret, h.get("x-hub-signature-256"), body)
    elif hook.verify == "standard":
        verifiers.standard(
            hook.secret, h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature"), body, now
        )
    else:
        verifiers.bearer(hook.secret, h.get("authorization"))


async def record(
    rt: Runtime, hook: Hook, event_id: str | None, payload: dict[str, Any], *, body_sha256: bytes | None = None
) -> tuple[int, bool]:
    """Record the event, enqueue its job and send its signal in one transaction; (job id, whether it is new).

    A duplicate is an event whose (hook, event_id) or, when given, (hook, body_sha256) is already
    recorded: it enqueues and signals nothing. A hook that only signals answers with the id of the
    job its signal woke (0 when the signal was kept for a wait yet to begin, or the event gave no key).
    """
    assert rt.db is not None
    try:
        conn = await rt.db.connection()
        if hook.signal is None:
            return await _record_job(conn, hook, event_id, payload, body_sha256)
        event_key = hook.event_key(payload.get("event"))
        async with conn.transaction():  # the event, its job and its signal: all written, or none
            if hook.job_type:
                job_id, new = await _record_job(conn, hook, event_id, payload, body_sha256)
            elif event_id is None:
                job_id, new = 0, True
            else:
                cur = await conn.execute(
                    query("inbound_event_signal_record"), _event_params(hook, event_id, payload, body_sha256)
                )
                job_id, new = 0, await cur.fetchone() is not None
            if new and event_key is not None:
                cur = await conn.execute(query("job_signal"), {"event_key": event_key, "payload": Jsonb(payload)})
                woken = (await cur.fetchone() or (None,))[0]
                logs.info("inbound_signal", hook=hook.name, event_id=event_id, event_key=event_key, woke=woken)
                if not hook.job_type and woken is not None:
                    job_id = int(woken)
                    if event_id is not None:
                        await conn.execute(
                            query("inbound_event_signalled"),
                            {"hook": hook.name, "event_id": event_id, "job_id": job_id},
                        )
            return job_id, new
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(exc) from exc


def _event_params(hook: Hook, event_id: str, payload: dict[str, Any], body_sha256: bytes | None) -> dict[str, Any]:
    return {"hook": hook.name, "event_id": event_id, "body_sha256": body_sha256, "received_at": payload["received_at"]}


async def _record_job(
    conn: psycopg.AsyncConnection[Any],
    hook: Hook,
    event_id: str | None,
    payload: dict[str, Any],
    body_sha256: bytes | None,
) -> tuple[int, bool]:
    """Record the event and enqueue its job in one statement; (job id, whether it is new).

    Every path gives the job its handler's `priority=` (else 0), as `crontick.enqueue` does.
    """
    from crontick.jobs.queue import enqueue
    from crontick.jobs.registry import declared_max_attempts, declared_priority

    flow = hook.flow(payload.get("event")) if hook.debounce is not None or hook.group_key is not None else Flow()
    if event_id is None:  # nothing to dedupe on (a bearer sender without Idempotency-Key)
        job_id = await enqueue(
            conn,
            hook.job_type,
            payload,
            group_key=flow.group_key,
            debounce=flow.debounce,
            max_attempts=hook.max_attempts,
            start_by=hook.start_by_seconds,
        )
        return int(job_id), True
    max_attempts = hook.max_attempts if hook.max_attempts is not None else declared_max_attempts(hook.job_type)
    params = _event_params(hook, event_id, payload, body_sha256) | {
        "type": hook.job_type,
        "payload": Jsonb(payload),
        "priority": declared_priority(hook.job_type),
        "max_attempts": max_attempts,
        "traceparent": tracing.traceparent(),
        "start_by_seconds": hook.start_by_seconds,
    }
    statement = "inbound_event_record"
    if flow != Flow():  # a debounce merges into the sender's open job, whose id only the enqueue knows
        statement = "inbound_event_flow_record"
        debounce = flow.debounce.params() if flow.debounce is not None else dict.fromkeys(DEBOUNCE_PARAMS)
        params |= {"group_key": flow.group_key, **debounce}
    for _ in range(2):  # the second run sees a concurrent twin's row that the first one waited for
        cur = await conn.execute(query(statement), params)
        row = await cur.fetchone()
        if row is not None:
            if (
                statement == "inbound_event_flow_record"
                and (max_attempts is not None or hook.start_by_seconds is not None)
                and row[1]
            ):
                # Its enqueue (sql/functions/inbound_event_record.sql) takes neither: set here, not yet started.
                await conn.execute(
                    query("inbound_job_options"),
                    {"id": row[0], "max_attempts": max_attempts, "start_by_seconds": hook.start_by_seconds},
                )
            if statement == "inbound_event_flow_record" and params["traceparent"] is not None and row[1]:
                await conn.execute(query("job_keep_traceparent"), {"id": row[0], "traceparent": params["traceparent"]})
            return int(row[0]), bool(row[1])
    raise CrontickError(f"inbound hook {hook.name!r}: expected a job id for event {event_id!r}, got none")
