"""Reading a request body under a byte cap, so no caller can make the server buffer more than it allows."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse

from crontick.errors import CrontickError


class BodyTooLarge(CrontickError):
    """The request declared or sent more than the cap; answer 413 and read no further."""

    def __init__(self, limit: int, seen: int) -> None:
        self.limit = limit
        super().__init__(f"expected a request body of at most {limit} bytes, got: {seen} bytes or more")


class BodyTimeout(CrontickError):
    """The body did not arrive within the deadline; answer 408 and read no further."""

    def __init__(self, seconds: float, seen: int) -> None:
        self.seconds = seconds
        super().__init__(f"expected the request body within {seconds:g} s, got {seen} bytes by then")


def declared_too_large(request: Request, limit: int) -> bool:
    """True when Content-Length already says the body is over the cap: refuse before reading a byte."""
    declared = request.headers.get("content-length", "")
    return declared.isdigit() and int(declared) > limit


async def read_body_capped(request: Request, limit: int, *, seconds: float | None = None) -> bytes:
    """The raw body, streamed chunk by chunk; BodyTooLarge as soon as it passes `limit` bytes, and
    BodyTimeout when `seconds` (if given) pass before its end: a sender trickling a byte at a time
    holds a connection for that long at most.

    Only the methods that need the raw bytes call this (a QStash signature covers the body; a
    bearer secret does not), so an unauthenticated upload is never read at all.
    """
    if declared_too_large(request, limit):
        raise BodyTooLarge(limit, int(request.headers["content-length"]))
    body = bytearray()
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise BodyTooLarge(limit, len(body))
    except TimeoutError:
        raise BodyTimeout(seconds or 0.0, len(body)) from None
    return bytes(body)


def too_large(limit: int) -> JSONResponse:
    """The 413 answer, shared by every endpoint that reads a body."""
    return JSONResponse(
        {
            "error": "body_too_large",
            "detail": f"the request body is over {limit} bytes (CRONTICK_MAX_BODY_BYTES); send less",
        },
        status_code=413,
        headers={"Connection": "close"},
    )


def misconfigured() -> JSONResponse:
    """The same answer whatever is wrong: the caller may be anyone, and the detail (a variable's
    value, a handler module's import error) goes to the log only, where the operator reads it."""
    return JSONResponse(misconfigured_body(), status_code=503)


def misconfigured_body() -> dict[str, str]:
    return {
        "error": "misconfigured",
        "detail": "crontick is not configured correctly; the server log names the setting to fix",
    }
