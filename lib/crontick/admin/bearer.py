"""The JSON admin API's credential: `Authorization: Bearer <secret>` gives the admin or the viewer role."""

from __future__ import annotations

import hmac

from crontick.settings import Settings


def role(authorization: str | None, settings: Settings) -> str | None:
    """ "admin", "viewer" or None. Both secrets are compared, in constant time, whatever matches;
    CRON_SECRET is never one of them, however the Settings were built (Settings.admin_roles)."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    given = token.encode()
    found = None
    for name, secret in settings.admin_roles.items():
        if hmac.compare_digest(given, secret.encode()) and found is None:
            found = name
    return found
