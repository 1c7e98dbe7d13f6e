"""The SSRF guard's corners: IPv6 ranges Python's `is_global` calls public but that lead inside."""

from __future__ import annotations

import ipaddress

import pytest

from crontick.http.netguard import is_internal


@pytest.mark.parametrize(
    "address",
    [
        "fec0::1",  # site-local (deprecated, still routed inside some networks)
        "feff:ffff::1",
        "64:ff9b:1::a9fe:a9fe",  # local-use NAT64: a translator inside your network
        "64:ff9b:1:ffff::1",
        "::127.0.0.1",  # IPv4-compatible ::a.b.c.d
        "::169.254.169.254",
        "::1.1.1.1",  # refused whole, whatever it carries: the form is deprecated
        "::ffff:0:127.0.0.1",  # IPv4-translated (SIIT)
    ],
)
def test_ranges_is_global_calls_public_are_internal(address: str) -> None:
    assert ipaddress.ip_address(address).is_global  # what Python says (3.11): why the guard names them
    assert is_internal(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address", ["2606:4700:4700::1111", "2a00:1450:4001::1", "64:ff9b::101:101", "2001:4860:4860::8888"]
)
def test_neighbours_of_those_ranges_stay_public(address: str) -> None:
    assert not is_internal(ipaddress.ip_address(address))
