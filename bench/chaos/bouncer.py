"""The row of a PgBouncer scenario on a machine without PgBouncer (tests/support/pgbouncer.py starts one)."""

from __future__ import annotations

import os

from tests.support.pgbouncer import REQUIRE_VARIABLE

from .scenario import Row


def not_run(scenario: str) -> Row:
    """A failure where CI requires PgBouncer (CRONTICK_REQUIRE_PGBOUNCER), else a row saying why it did not run."""
    required = bool(os.environ.get(REQUIRE_VARIABLE))
    return Row(scenario, "not run", "PgBouncer is not installed (apt-get install pgbouncer)", ok=not required)
