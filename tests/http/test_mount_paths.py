"""crontick.http.mount and what is built on it, without a server: the prefix, paths inside crontick,
signed URLs, return addresses and cookie rules under /ops (tests/http/test_mount.py runs them over HTTP)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request

from crontick.admin import session
from crontick.admin.return_to import safe_back
from crontick.auth.tick import credentials
from crontick.http import mount
from crontick.settings import Settings


def _request(url: str, root_path: str = "") -> Request:
    """A request as uvicorn or a Starlette Mount hands it over: `path` is the whole path, prefix included."""
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    path, _, query = ("/" + path).partition("?")
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "scheme": scheme,
        "root_path": root_path,
        "path": path,
        "query_string": query.encode(),
        "headers": [(b"host", host.encode())],
        "server": (host.split(":")[0], 443 if scheme == "https" else 80),
    }
    return Request(scope)


@pytest.mark.parametrize(
    ("root_path", "path", "prefix", "inside"),
    [
        ("", "/api/cron/tick", "", "/api/cron/tick"),
        ("/ops", "/ops/api/cron/tick", "/ops", "/api/cron/tick"),
        ("/ops/", "/ops/admin", "/ops", "/admin"),  # --root-path /ops/ means /ops
        ("/ops", "/ops", "/ops", "/"),
        ("/x/ops", "/x/ops/admin/jobs", "/x/ops", "/admin/jobs"),  # a Mount inside an app behind --root-path /x
        ("/ops", "/opsx/admin", "/ops", "/opsx/admin"),  # not under the prefix: left as it is
    ],
)
def test_prefix_and_the_path_inside_crontick(root_path: str, path: str, prefix: str, inside: str) -> None:
    request = _request(f"http://127.0.0.1:8000{path}", root_path)
    assert mount.prefix(request) == prefix
    assert mount.route_path(request) == inside
    assert mount.url(request, "/admin/login") == prefix + "/admin/login"


def test_signed_urls_are_the_public_url_plus_the_path_inside_crontick() -> None:
    request = _request("http://127.0.0.1:8000/ops/api/hooks/sms?bodySHA256=ab", "/ops")
    unset = credentials(request, b"", Settings())
    assert (unset.base_url, unset.url) == (
        "http://127.0.0.1:8000/ops",
        "http://127.0.0.1:8000/ops/api/hooks/sms?bodySHA256=ab",
    )
    public = credentials(request, b"", Settings(public_url="https://app.example.com/ops"))
    assert (public.base_url, public.url) == (
        "https://app.example.com/ops",
        "https://app.example.com/ops/api/hooks/sms?bodySHA256=ab",
    )
    at_root = credentials(
        _request("http://127.0.0.1:8000/api/cron/tick"), b"", Settings(public_url="https://a.example/prod")
    )
    assert at_root.url == "https://a.example/prod/api/cron/tick"  # an API Gateway stage, as before


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/ops/admin/jobs?status=failed", "/ops/admin/jobs?status=failed"),
        ("/ops/admin", "/ops/admin"),
        ("/admin/jobs", "/ops/admin"),  # the admin's path without the prefix is the host app's, not ours
        ("/ops/administrator", "/ops/admin"),
        ("/", "/ops/admin"),
        ("//evil.example/ops/admin", "/ops/admin"),
        ("https://evil.example/ops/admin", "/ops/admin"),
        ("/ops/admin\\..\\x", "/ops/admin"),
        (None, "/ops/admin"),
    ],
)
def test_return_addresses_stay_inside_the_admin_under_the_prefix(value: Any, expected: str) -> None:
    assert safe_back(_request("http://127.0.0.1:8000/ops/admin/login", "/ops"), value) == expected


def test_cookie_rules_under_a_prefix() -> None:
    https = _request("https://app.example/ops/admin", "/ops")
    assert session.cookie_name(https) == "__Secure-crontick_admin"
    assert session.cookie_paths(https) == ("/ops/admin", "/ops/admin.json")
    loop = _request("http://127.0.0.1:8123/ops/admin", "/ops")
    assert session.cookie_name(loop) == "crontick_admin_8123"
    assert session.cookie_paths(loop) == ("/ops/admin", "/ops/admin.json")
    root = _request("https://app.example/admin")
    assert session.cookie_name(root) == "__Host-crontick_admin" and session.cookie_paths(root) == ("/",)
