"""The admin's return addresses (`next=` at sign-in, `back=` on actions): only ever one of the admin's own pages."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from starlette.requests import Request

from crontick.admin import session
from crontick.http import mount

# A return address (`next=`, `back=`) longer than any link of the admin's is refused, and so is one
# still percent-encoded after this many rounds of decoding.
RETURN_MAX_CHARS = 2000
RETURN_DECODE_ROUNDS = 4


def safe_back(request: Request, value: Any, default: str = "/admin") -> str:
    """A return address inside this admin only (never another site, nor the host app's own pages).

    `value` is a path as the browser sees it (under the mount prefix, as every link of the admin
    is); `default` is one of the admin's own paths, and is answered under the prefix. The path is
    read as a browser and the servers behind it may read it (percent-decoded until it stops
    changing, backslashes as slashes, dot-segments resolved, empty segments dropped) and must then
    lie under the admin's own path; what is answered is that resolved path, re-encoded, with the
    value's query string. Anything else (another host, a scheme, `/admin/../signup`,
    `/admin/%2e%2e/signup`) gets `default`.
    """
    home = mount.url(request, default)
    text = value if isinstance(value, str) else ""
    if not text or len(text) > RETURN_MAX_CHARS or not text.isprintable():
        return home
    split = min((i for i in (text.find("?"), text.find("#")) if i >= 0), default=len(text))
    path = _resolved(text[:split])
    admin = session.admin_path(request)
    if path is None or not (path == admin or path.startswith(admin + "/")):
        return home
    return quote(path, safe="/") + text[split:]


def _resolved(path: str) -> str | None:
    """An absolute path with its dot-segments resolved, or None for anything that is not one."""
    for _ in range(RETURN_DECODE_ROUNDS):
        decoded = unquote(path).replace("\\", "/")
        if decoded == path:
            break
        path = decoded
    else:
        return None  # still encoded after every round: no link of the admin's is
    if not path.startswith("/") or path.startswith("//") or not path.isprintable():
        return None  # `//host` is another site to a browser; a control character hides one
    kept: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if not kept:
                return None
            kept.pop()
        elif segment not in ("", "."):
            kept.append(segment)
    return "/" + "/".join(kept)
