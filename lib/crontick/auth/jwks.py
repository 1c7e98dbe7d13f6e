"""An issuer's signing keys (JWKS), cached per process: one fetch in flight, last good keys kept, failures backed off."""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass
from typing import Any

from crontick import logs
from crontick.errors import Refused
from crontick.http import client

# GitHub rotates its signing keys rarely: keys are refreshed hourly, and an unknown kid triggers a
# refetch at most once a minute, so a stream of anonymous JWT-shaped bearers with made-up kids
# cannot make every request fetch the JWKS.
TTL_SECONDS = 3600.0
REFETCH_MIN_SECONDS = 60.0
# After a failed fetch the next is allowed only after 5 s, doubling per failure up to 5 minutes.
FAILURE_BACKOFF_SECONDS = 5.0
FAILURE_BACKOFF_MAX_SECONDS = 300.0


class KeysUnavailable(Exception):
    """No usable key: none was ever loaded, or the kid is not published. The message names which."""


@dataclass(frozen=True)
class KeySet:
    jwks: Any  # jwt.PyJWKSet
    fetched_at: float

    def has(self, kid: str) -> bool:
        return any(k.key_id == kid for k in self.jwks.keys)


@dataclass
class _IssuerState:
    keys: KeySet | None = None
    next_fetch_at: float = 0.0  # monotonic time before which no fetch is made
    failures: int = 0
    last_error: str = "no fetch was allowed yet"


_state: dict[str, _IssuerState] = {}
# One lock per event loop: an asyncio.Lock cannot be shared between loops (tests run several apps).
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def reset() -> None:
    """Forget every cached key set and backoff (tests start each issuer fresh)."""
    _state.clear()


def _lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    lock = _locks.get(loop)
    if lock is None:
        lock = _locks[loop] = asyncio.Lock()
    return lock


async def signing_key(issuer: str, kid: str, jwks_url: str | None = None) -> Any:
    """The public key for `kid`; fetches the issuer's key set (`jwks_url`, default `<issuer>/.well-known/jwks`)
    only when allowed (see the module constants)."""
    url = jwks_url or f"{issuer}/.well-known/jwks"
    state = _state.setdefault(url, _IssuerState())
    if not _fresh_with(state, kid, time.monotonic()):
        async with _lock():  # whoever waited here finds the keys the first caller fetched
            now = time.monotonic()
            if not _fresh_with(state, kid, now) and now >= state.next_fetch_at:
                await _refresh(issuer, url, state, now)
    if state.keys is None:
        raise KeysUnavailable(f"no keys loaded yet; {state.last_error}")
    if not state.keys.has(kid):
        raise KeysUnavailable(f"expected a key id published in {url}, got: {kid[:80]!r}")
    return state.keys.jwks[kid].key  # possibly past its TTL: the last good keys beat refusing every tick


async def key_for(token: str, issuer: str, jwks_url: str | None = None) -> Any:
    """The public key the token's header names (`kid`), from the issuer's key set; Refused when there is none."""
    import jwt

    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.PyJWTError as exc:
        raise Refused(f"{type(exc).__name__}: {exc}") from None
    if not isinstance(kid, str) or not kid:
        raise Refused("expected a kid in the token header, got none")
    try:
        return await signing_key(issuer, kid, jwks_url)
    except KeysUnavailable as exc:
        raise Refused(str(exc)) from None


def _fresh_with(state: _IssuerState, kid: str, now: float) -> bool:
    return state.keys is not None and state.keys.has(kid) and now - state.keys.fetched_at <= TTL_SECONDS


async def _refresh(issuer: str, url: str, state: _IssuerState, now: float) -> None:
    try:
        state.keys = await _fetch(url)
    except KeysUnavailable as exc:
        state.failures += 1
        state.last_error = str(exc)
        backoff = min(FAILURE_BACKOFF_MAX_SECONDS, FAILURE_BACKOFF_SECONDS * 2 ** (state.failures - 1))
        state.next_fetch_at = now + backoff
        logs.warning(
            "jwks_fetch_failed",
            issuer=issuer,
            detail=str(exc),
            retry_in_seconds=backoff,
            keeping_keys=state.keys is not None,
        )
        return
    state.failures = 0
    state.next_fetch_at = now + REFETCH_MIN_SECONDS


async def _fetch(url: str) -> KeySet:
    import httpx
    import jwt

    try:
        # Read like every outbound answer: at most RESPONSE_MAX_BYTES, on the wire and decoded (a
        # key set is a few KB; one cut short fails to parse and the last good keys stay).
        response = await client.bounded_request("GET", url)
        response.raise_for_status()
        keys = jwt.PyJWKSet.from_dict(response.json())
    except client.UnreadableBody as exc:
        raise KeysUnavailable(f"could not load the JWKS from {url}: {exc}") from None
    except (httpx.HTTPError, ValueError, RecursionError, jwt.PyJWTError) as exc:
        raise KeysUnavailable(f"could not load the JWKS from {url}: {type(exc).__name__}") from None
    return KeySet(keys, time.monotonic())
