"""Who is acting in this admin request, as an authorize() hook named them: what every audit row records as `actor`.

The gate in front of every page and action (crontick.admin.gate) sets it once, and
crontick.admin.audit.store.record reads it, so a new action cannot forget to pass it down. Each request
runs in its own task, and so in its own copy of the context.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ACTOR: ContextVar[str | None] = ContextVar("crontick_admin_actor", default=None)


@contextmanager
def acting_as(name: str | None) -> Iterator[None]:
    """Within the block, audit rows record `name` (None: only the role is known)."""
    token = _ACTOR.set(name)
    try:
        yield
    finally:
        _ACTOR.reset(token)


def current() -> str | None:
    return _ACTOR.get()
