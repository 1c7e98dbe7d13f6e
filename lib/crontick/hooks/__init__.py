"""Inbound webhooks (declared with crontick.inbound, served at /api/hooks/{name}) and prompt start (the kick)."""
