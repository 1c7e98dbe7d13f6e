"""crontick inside a Django project: an installed app (`crontick.django`) with enqueue, kick and ORM-safe handlers.

Add `"crontick.django"` to INSTALLED_APPS; then `manage.py crontick_migrate`, `manage.py
crontick_tick [--drain]`, `crontick.django.enqueue(...)` inside `transaction.atomic`,
`@crontick.django.handler(...)` for handlers that use the ORM, `crontick.django.urls` in the
URLconf and `crontick.django.asgi.mount(...)` in asgi.py (docs/django.md). Nothing else in
crontick imports Django (an import-linter contract in pyproject.toml says so).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crontick.django.jobs import enqueue, handler, kick

# Imported on first use, as `crontick` itself does: Django loads `crontick.django.apps` at every
# start (runserver, migrate, shell), which then pays for neither psycopg nor the queue.
_LAZY = {"enqueue": "jobs", "handler": "jobs", "kick": "jobs"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'crontick.django' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = ["enqueue", "handler", "kick"]
