"""Outbound requests that may not reach internal addresses: the check runs on the resolved address at connect time."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import weakref
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from crontick.errors import PermanentError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Ranges Python's `is_global` calls public that are not (checked on 3.11): refused whole.
_NOT_GLOBAL = (
    ipaddress.ip_network("fec0::/10"),  # site-local (RFC 3879 deprecated it; stacks may still route it inside)
    ipaddress.ip_network("64:ff9b:1::/48"),  # local-use NAT64 (RFC 8215): a translator inside your network
    ipaddress.ip_network("::/96"),  # IPv4-compatible ::a.b.c.d (RFC 4291 deprecated it), ::1 and :: included
    ipaddress.ip_network("::ffff:0:0:0/96"),  # IPv4-translated ::ffff:0:a.b.c.d (SIIT, RFC 2765)
)


class BlockedAddress(PermanentError):
    """The destination resolved to a loopback, private, link-local or otherwise non-public address."""

    def __init__(self, host: str, address: str) -> None:
        super().__init__(
            f"expected {host!r} to resolve to a public address, got: {address}, which is internal "
            f"(CRONTICK_WEBHOOK_DENY_PRIVATE is on; set it to 0 only if every webhook URL is yours)"
        )


def is_internal(address: IPAddress) -> bool:
    """True for anything but a global unicast address, after unwrapping IPv4 carried inside IPv6.

    `is_global` is False for loopback, RFC 1918, link-local (169.254/16: cloud metadata), CGNAT
    (100.64/10), unspecified, documentation and reserved ranges, and IPv6 ULA (fc00::/7) and ::1;
    the ranges in _NOT_GLOBAL, which it calls global, are refused here.
    """
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in network for network in _NOT_GLOBAL):
            return True
        inner = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if inner is None and address in _NAT64:
            inner = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if inner is not None:
            return is_internal(inner)
    return not address.is_global or address.is_multicast


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves the name itself, refuses if ANY answer is internal, then connects to a checked IP literal.

    Connecting to the checked literal (not the name) is what defeats DNS rebinding: there is no
    second lookup between the check and the connect. TLS still verifies the original host name,
    which httpcore passes to start_tls separately.
    """

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _resolve(host, port, timeout)
        for address in addresses:
            if is_internal(address):
                raise BlockedAddress(host, str(address))
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError(f"no address for {host!r}")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedAddress(path, "a unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def _resolve(host: str, port: int, timeout: float | None) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout)
    except (OSError, TimeoutError) as exc:
        raise httpcore.ConnectError(f"could not resolve {host!r}: {exc}") from exc
    # The scope id (%eth0) of a link-local IPv6 answer is dropped: such an address is refused anyway.
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


class _GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport, with the connection pool built on the guarded network backend."""

    def __init__(self) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=_GuardedBackend()
        )


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()


def client() -> httpx.AsyncClient:
    """A client per event loop that refuses internal destinations (no env proxies: a proxy would hide the target)."""
    from crontick.http.client import DEFAULT_TIMEOUT

    loop = asyncio.get_running_loop()
    existing = _clients.get(loop)
    if existing is None or existing.is_closed:
        existing = httpx.AsyncClient(
            transport=_GuardedTransport(), timeout=DEFAULT_TIMEOUT, follow_redirects=False, trust_env=False
        )
        _clients[loop] = existing
    return existing
