"""Signing in and out of the admin's pages: the login form, sign-out, and the store of signed-out sessions.

(The session itself, its cookie and CSRF tokens, is crontick.admin.session, which the gate reads.)
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from crontick.admin import routing
from crontick.admin.routing import ApiRoute


def routes() -> list[BaseRoute]:
    return [
        routing.route("/admin/login", "sign_in.page:login_form", "GET"),
        routing.route("/admin/login", "sign_in.page:login"),
        routing.route("/admin/logout", "sign_in.page:logout"),
    ]


def api_routes() -> list[ApiRoute]:
    """None: the JSON API takes a bearer secret, not a session."""
    return []
