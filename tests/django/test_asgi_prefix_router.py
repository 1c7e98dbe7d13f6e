"""crontick.django.asgi's router, on its own: which app gets a request, and the scope crontick's app sees (no Django project needed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from crontick.django.asgi import PrefixRouter, checked_prefix


def route(scope: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Which app the router called for `scope`, and the scope it was given."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def app(name: str) -> Any:
        async def call(scope: dict[str, Any], receive: Any, send: Any) -> None:
            seen.append((name, scope))

        return call

    asyncio.run(PrefixRouter("/ops", app("crontick"), app("django"))(scope, None, None))  # type: ignore[arg-type]
    (called,) = seen
    return called


@pytest.mark.parametrize(
    ("path", "root_path", "expected"),
    [
        ("/ops/api/cron/tick", "", "crontick"),
        ("/ops", "", "crontick"),
        ("/ops/", "", "crontick"),
        ("/opsx/api/cron/tick", "", "django"),  # a prefix is whole path segments
        ("/api/cron/tick", "", "django"),
        ("/", "", "django"),
        ("/app/ops/admin", "/app", "crontick"),  # the project itself served under a root_path
        ("/app/admin", "/app", "django"),
    ],
)
def test_a_request_goes_to_crontick_only_under_the_prefix(path: str, root_path: str, expected: str) -> None:
    called, scope = route({"type": "http", "path": path, "root_path": root_path})
    assert called == expected
    if expected == "crontick":  # as a Starlette Mount passes it on: path whole, the prefix added to root_path
        assert scope["path"] == path and scope["root_path"] == root_path + "/ops"
        assert scope["app_root_path"] == root_path
    else:
        assert scope == {"type": "http", "path": path, "root_path": root_path}


def test_lifespan_goes_to_crontick_and_websockets_to_django() -> None:
    assert route({"type": "lifespan"})[0] == "crontick"  # Django does not take part in the lifespan
    assert route({"type": "websocket", "path": "/ops/ws", "root_path": ""})[0] == "django"


def test_a_prefix_is_one_leading_slash_and_never_the_root() -> None:
    assert checked_prefix("ops/") == checked_prefix("/ops") == checked_prefix("/ops/") == "/ops"
    assert checked_prefix("internal/ops") == "/internal/ops"
    for bad in ("", "/", "//", "/ops?x=1"):
        with pytest.raises(ImproperlyConfigured, match="expected a path prefix such as /ops"):
            checked_prefix(bad)
