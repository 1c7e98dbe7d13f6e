"""Vercel function for /admin and /api/admin (vercel.json rewrites them here): only exposes the crontick ASGI app."""

from crontick.app import app

__all__ = ["app"]
