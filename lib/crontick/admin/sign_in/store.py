"""Sign-in's store: signed-out admin sessions (crontick_admin_signouts), and the audit rows of signing in and out.

Sign-out records a cookie's session id, and the gate refuses it.

The cookie stays signed and self-contained, so signing in records no session (only its audit
row) and a deploy signs nobody out. What a signature cannot say is that its session has ended: a copy of the cookie
(a shared machine, a proxy's log, another server on loopback) would open the admin until it
expires. So sign-out records the session id until then, in one row per sign-out.
"""

from __future__ import annotations

from datetime import UTC, datetime

from crontick.admin.audit.store import record
from crontick.admin.tx import Conn, action, read
from crontick.db import query


async def signed_out(conn: Conn, session_id: str) -> bool:
    """True when this session was signed out (its cookie, and every copy of it, opens nothing)."""
    async with read(conn, "admin session") as cur:
        await cur.execute(query("admin_session_signed_out"), {"session": session_id})
        return await cur.fetchone() is not None


async def sign_out(conn: Conn, session_id: str, expires: int, role: str) -> None:
    """Record the session as ended until its cookie's own expiry (a Unix time), and audit it."""
    async with action(conn, "admin sign-out") as cur:
        await cur.execute(
            query("admin_session_sign_out"),
            {"session": session_id, "expires_at": datetime.fromtimestamp(expires, UTC)},
        )
        await record(cur, role, "sign_out", {}, 1)


async def signed_in(conn: Conn, role: str | None, client: str) -> None:
    """Audit a sign-in with the secret: `role` is the one it opened, None for a secret that opens nothing."""
    async with action(conn, "admin sign-in") as cur:
        await record(cur, role, "sign_in" if role else "sign_in_failed", {"client": client}, 1 if role else 0)
