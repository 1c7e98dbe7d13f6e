"""Vercel function for /api/hooks/{name} (inbound webhooks): only exposes the crontick ASGI app."""

from crontick.app import app

__all__ = ["app"]
