"""crontick redirects nothing to a host the client names: a path with a slash too many is a 404, not Starlette's
redirect whose Location comes from the Host header, and the root of a mount answers with and without its slash.

Over real HTTP (uvicorn) with a forged Host: the plain app, `uvicorn --root-path /ops` behind a proxy that strips
the prefix, and the app mounted in a Starlette and in a FastAPI host app (the Django mount:
tests/django/test_asgi_example_project.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount

from crontick.app import create_app
from tests.support.admin_pages import settings_for
from tests.support.servers import serve

FORGED = {"Host": "evil.example"}
# Each of crontick's paths with a slash too many: Starlette's redirect would drop it, at the forged host.
SLASHED = [("GET", "/api/health/"), ("POST", "/api/cron/tick/"), ("GET", "/admin/login/"), ("POST", "/api/hooks/x/")]


@contextmanager
def hosted(database_url: str, how: str) -> Iterator[tuple[str, str]]:
    """(base URL, the prefix crontick answers under) with crontick hosted `how`."""
    app = create_app(settings_for(database_url, kick="off"))
    if how == "plain":
        with serve(app) as base:
            yield base, ""
    elif how == "root-path":  # the proxy in front strips /ops: uvicorn is asked for /api/health/
        with serve(app, root_path="/ops") as base:
            yield base, ""
    elif how == "starlette":
        with serve(Starlette(routes=[Mount("/ops", app=app)])) as base:
            yield base, "/ops"
    else:
        host = FastAPI()
        host.mount("/ops", app)
        with serve(host) as base:
            yield base, "/ops"


@pytest.mark.parametrize("how", ["plain", "root-path", "starlette", "fastapi"])
def test_a_path_with_a_slash_too_many_is_a_404_never_a_redirect_to_the_host_header(database_url: str, how: str) -> None:
    with hosted(database_url, how) as (base, prefix), httpx.Client(base_url=base, timeout=30) as c:
        for method, path in SLASHED:
            answer = c.request(method, prefix + path, headers=FORGED)
            assert (answer.status_code, answer.headers.get("location")) == (404, None), (path, answer.headers)
            assert path.startswith("/admin") or answer.json()["error"] == "not_found", answer.text
        home = c.get(prefix + "/", headers=FORGED)
        expected = "/ops/admin" if how == "root-path" else prefix + "/admin"
        assert (home.status_code, home.headers["location"]) == (302, expected)  # a path: no host in it
        health = c.get(prefix + "/api/health", headers=FORGED)
        assert health.status_code == 200, health.text


def test_the_prefix_alone_is_served_as_the_mount_s_root(database_url: str) -> None:
    """What the Django mount and an ASGI server's root_path hand crontick for `/ops`: the root, not a redirect."""
    app = create_app(settings_for(database_url, kick="off"))

    async def prefix_alone(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope = {**scope, "path": "/ops", "root_path": "/ops"}
        await app(scope, receive, send)

    with serve(prefix_alone) as base:
        answer = httpx.get(base + "/anything", headers=FORGED, timeout=30)
    assert (answer.status_code, answer.headers["location"]) == (302, "/ops/admin")
