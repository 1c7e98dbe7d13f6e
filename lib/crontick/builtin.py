"""The job types crontick ships: `webhook` (POST JSON to a URL)."""

from __future__ import annotations

from typing import Any

import httpx

from . import http
from .errors import PayloadError, PermanentError
from .handlers import Job, handler

RETRYABLE_STATUSES = frozenset({408, 429})
BODY_EXCERPT_BYTES = 500


class HTTPStatusError(Exception):
    """A provider answered with a status worth retrying (408, 429, 5xx)."""


@handler("webhook")
async def webhook(payload: Any, job: Job) -> None:
    """POST payload["json"] to payload["url"]. 2xx succeeds; 408, 429, 5xx and network errors retry."""
    if not isinstance(payload, dict) or not isinstance(payload.get("url"), str) or "json" not in payload:
        raise PayloadError("webhook", '{"url": "https://…", "json": <any JSON>}', payload)
    url = payload["url"]
    if not url.startswith(("http://", "https://")):
        raise PayloadError("webhook", 'a "url" starting with http:// or https://', url)
    headers = {"Idempotency-Key": f"job:{job.id}"}
    response = await http.client().post(url, json=payload["json"], headers=headers)
    check_response(response, f"webhook {public_url(url)}")


def public_url(url: str) -> str:
    """The URL without credentials, query or fragment, which may carry tokens, for error text."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(userinfo=b"", query=None, fragment=None))


def check_response(response: httpx.Response, what: str) -> None:
    """Raise by status: retryable for 408/429/5xx, PermanentError for any other non-2xx."""
    if response.is_success:
        return
    excerpt = response.content[:BODY_EXCERPT_BYTES].decode("utf-8", "replace")
    message = f"{what} answered HTTP {response.status_code}: {excerpt}"
    if response.status_code in RETRYABLE_STATUSES or response.status_code >= 500:
        raise HTTPStatusError(message)
    raise PermanentError(message)
