"""Who may trigger a tick: each configured method is tried; any one that accepts authorises."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from starlette.requests import Request

from .db import Database
from .settings import Settings


@dataclass(frozen=True)
class Decision:
    ok: bool
    method: str | None  # which method accepted, for the log
    reason: str  # why it was refused (for the log only, never for the response)


async def authorize(request: Request, body: bytes, settings: Settings, db: Database) -> Decision:
    """Try each configured method in turn. The caller answers a uniform 401 on refusal."""
    token = bearer_token(request.headers.get("authorization"))
    reasons: list[str] = []
    if settings.cron_secret:
        if token is not None and hmac.compare_digest(token.encode(), settings.cron_secret.encode()):
            return Decision(True, "bearer", "")
        reasons.append("bearer: missing" if token is None else "bearer: secret does not match")
    return Decision(False, None, "; ".join(reasons) or "no credential")


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
