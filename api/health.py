"""Vercel function for /api/health: only exposes the crontick ASGI app."""

from crontick.app import app

__all__ = ["app"]
