"""The shared outbound httpx client, and the one capped reader every outbound call's answer goes through."""

from __future__ import annotations

import asyncio
import weakref
import zlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from crontick.errors import CrontickError

if TYPE_CHECKING:  # imported on first use instead: a tick that sends nothing never pays for httpx
    import httpx

# (connect, read, write, pool) seconds, as httpx takes it: a plain tuple needs no httpx import.
TimeoutTuple = tuple[float | None, float | None, float | None, float | None]
DEFAULT_TIMEOUT: TimeoutTuple = (5.0, 10.0, 10.0, 10.0)

# The most of any answer read, counted twice: on the wire and after decoding. Only an excerpt, a
# message id, a key set or a tick summary is ever used, so an answer that never ends, a huge one
# or a decompression bomb cannot fill the process's memory.
RESPONSE_MAX_BYTES = 64 * 1024
# Content-Encodings decoded, one layer at most, each by zlib with an output bound (max_length).
# Everything else is refused unread: br and zstd (no bounded decoder in the standard library),
# compress, unknown names, and stacked codings ("gzip, gzip" is how 273 bytes become 64 MiB).
ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
# The answer handed back holds the decoded body, which these headers no longer describe.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()


def client() -> httpx.AsyncClient:
    """The client for the running loop (creating one costs milliseconds, so it is cached)."""
    import httpx

    loop = asyncio.get_running_loop()
    existing = _clients.get(loop)
    if existing is None or existing.is_closed:
        existing = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, follow_redirects=False)
        _clients[loop] = existing
    return existing


class UnreadableBody(CrontickError):
    """The answer's body was not read, or not read whole: its Content-Encoding cannot be decoded with a bound,
    or its bytes are not what that encoding says. `answer` keeps the status and headers, with an empty body."""

    def __init__(self, detail: str, answer: httpx.Response) -> None:
        super().__init__(detail)
        self.answer = answer


async def bounded_request(
    method: str,
    url: str,
    *,
    using: httpx.AsyncClient | None = None,
    max_bytes: int = RESPONSE_MAX_BYTES,
    **kwargs: Any,
) -> httpx.Response:
    """Send a request and read at most `max_bytes` of its answer, on the wire and decoded; the rest is left unread.

    It asks for `Accept-Encoding: identity`, so a server that complies sends bytes that need no
    decoding. One layer of gzip or deflate, sent anyway, is decoded with an output bound; any other
    encoding raises UnreadableBody before a byte of the body is read. httpx's own decoding
    (`aiter_bytes`, `.content`) has no bound per chunk, so only `aiter_raw` is read here.
    Transport errors are httpx's, raised as they come.
    """
    import httpx

    headers = dict(kwargs.pop("headers", None) or {})
    if not any(name.lower() == "accept-encoding" for name in headers):
        headers["Accept-Encoding"] = "identity"
    async with (using or client()).stream(method, url, headers=headers, **kwargs) as streamed:
        kept = [(k, v) for k, v in streamed.headers.multi_items() if k.lower() not in _WIRE_HEADERS]

        def answer(body: bytes) -> httpx.Response:
            return httpx.Response(streamed.status_code, headers=kept, content=body, request=streamed.request)

        try:
            inflater = inflater_for(streamed.headers.get_list("content-encoding", split_commas=True))
            body = await read_capped(streamed.aiter_raw(), inflater, max_bytes)
        except Undecodable as exc:
            raise UnreadableBody(str(exc), answer(b"")) from None
    return answer(body)


class Undecodable(Exception):
    """Why a body cannot be read with a bound; bounded_request turns it into UnreadableBody with the answer."""


class Inflater:
    """One layer of gzip or deflate, decoded a chunk at a time into no more bytes than the caller has room for."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._zlib = zlib.decompressobj(ZLIB_WBITS[coding])
        self._started = False

    @property
    def done(self) -> bool:
        return self._zlib.eof

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode `data` into at most `room` bytes; input past that is dropped (the read stops there)."""
        out = bytearray()
        # max_length 0 would mean "no limit", so the loop never asks for less than one byte.
        while data and len(out) < room and not self._zlib.eof:
            try:
                out += self._zlib.decompress(data, room - len(out))
            except zlib.error as exc:
                if self.coding == "deflate" and not self._started:  # raw deflate, without the zlib header
                    self._zlib, self._started = zlib.decompressobj(-zlib.MAX_WBITS), True
                    continue
                raise Undecodable(f"expected a {self.coding} body, got bytes zlib cannot decode ({exc})") from None
            self._started = True
            data = self._zlib.unconsumed_tail
        return bytes(out)


def inflater_for(codings: list[str]) -> Inflater | None:
    """The decoder for an answer's Content-Encoding list; Undecodable for one that cannot be decoded with a bound."""
    layers = [c.strip().lower() for c in codings if c.strip() and c.strip().lower() != "identity"]
    if not layers:
        return None
    if len(layers) == 1 and layers[0] in ZLIB_WBITS:
        return Inflater(layers[0])
    shown = ", ".join(layers)
    raise Undecodable(
        f"expected an answer with no Content-Encoding or one layer of gzip or deflate, got: "
        f"{shown[:100]!r}; its body was not read"
    )


async def read_capped(chunks: AsyncIterator[bytes], inflater: Inflater | None, max_bytes: int) -> bytes:
    """At most `max_bytes` of a body, decoded by `inflater` (None: as sent); stops reading at that many bytes
    on the wire too, so compressed padding that decodes to nothing cannot keep it reading."""
    body = bytearray()
    wire = 0
    async for chunk in chunks:
        wire += len(chunk)
        body += chunk if inflater is None else inflater.feed(chunk, max_bytes - len(body))
        if len(body) >= max_bytes or wire >= max_bytes or (inflater is not None and inflater.done):
            break
    return bytes(body[:max_bytes])
