"""Vercel function for /api/cron/tick: only exposes the crontick ASGI app."""

from crontick.app import app

__all__ = ["app"]
