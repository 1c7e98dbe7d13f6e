"""Where crontick is mounted: the path prefix (the ASGI `root_path`) that every URL it makes starts with.

A host app that mounts crontick with Starlette's or FastAPI's `Mount("/ops", app=...)`, or an ASGI
server started with `--root-path /ops`, puts the prefix in `scope["root_path"]`, while
`scope["path"]` (and so `request.url.path`) is the whole path, prefix included. Both come from
the server's or the host app's configuration, never from a request header.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send


def prefix(conn: HTTPConnection) -> str:
    """`""` at the root; `"/ops"` under `Mount("/ops")` or `--root-path /ops` (never a trailing slash)."""
    return str(conn.scope.get("root_path") or "").rstrip("/")


def url(conn: HTTPConnection, path: str) -> str:
    """One of crontick's own paths (`/admin/jobs`) as a browser or caller must ask for it: under the prefix."""
    return prefix(conn) + path


def route_path(conn: HTTPConnection) -> str:
    """The request's path inside crontick, the prefix removed (`/api/cron/tick`): what crontick's routes match."""
    path = conn.url.path
    root = prefix(conn)
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root) :] or "/"
    return path


class PrefixRoot:
    """Serve the prefix itself (`/ops`) as crontick's root (`/ops/`), directly.

    The Django mount and `--root-path /ops` hand crontick `/ops` with nothing after it, which no route
    matches; Starlette would redirect it to `/ops/` with a Location built from the request's Host header
    (any host the client names, past Django's ALLOWED_HOSTS), so crontick's router redirects nothing.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        root = str(scope.get("root_path") or "").rstrip("/")
        if scope["type"] == "http" and root and scope["path"] == root:
            scope = {**scope, "path": root + "/"}
        await self.app(scope, receive, send)
