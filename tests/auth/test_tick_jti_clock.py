"""Replay protection does not depend on the app hosts' clocks: a used jti's row is pruned, and a token
recorded, by the database's clock, so a host whose clock runs ahead cannot prune the row of a token
that a host whose clock runs behind still accepts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from bench import faketime as ft
from crontick.auth import tick
from crontick.db import Database
from tests.support.constants import PYTHONPATH, ROOT
from tests.support.databases import url_of

AHEAD_SECONDS = 20 * 60  # past the token's lifetime and CLOCK_LEEWAY_SECONDS

# What a fast-clock host does on its next signed request: records its own token's jti (and prunes).
FAST_HOST = """
import asyncio, sys, time
from crontick.auth import tick as auth
from crontick.db import Database
asyncio.run(auth._use_jti(Database(sys.argv[1]), "fast-host-token", time.time() + 60))
"""


def use(url: str, jti: str, expires_at: float) -> str | None:
    """None when the jti was recorded, else the refusal's reason."""

    async def go() -> str | None:
        db = Database(url)
        try:
            await tick._use_jti(db, jti, expires_at)
        except tick.Refused as exc:
            return str(exc)
        finally:
            await db.close()
        return None

    return asyncio.run(go())


def test_a_fast_clock_host_cannot_prune_a_live_jti(database_url: str) -> None:
    faketime = ft.binary()
    if faketime is None:
        if ft.required():
            pytest.fail(ft.MISSING)
        pytest.skip(ft.MISSING + f" ({ft.REQUIRE_VARIABLE}=1 fails instead)")
    url = url_of(database_url)
    expires_at = time.time() + 60 + tick.CLOCK_LEEWAY_SECONDS
    assert use(url, "token-1", expires_at) is None
    fast = subprocess.run(
        ft.skewed([sys.executable, "-c", FAST_HOST, url], AHEAD_SECONDS, faketime),
        env={**ft.ENV, "PYTHONPATH": PYTHONPATH},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert fast.returncode == 0, fast.stderr
    assert use(url, "token-1", expires_at) == "jti already used (replayed token)"


def test_a_token_long_expired_by_the_databases_clock_is_not_recorded(database_url: str) -> None:
    url = url_of(database_url)
    long_ago = time.time() - tick.JTI_KEEP_AFTER_EXPIRY.total_seconds() - 60
    reason = use(url, "old-token", long_ago)
    assert reason is not None and "database's clock" in reason
    recent = time.time() - 60  # expired, but within the margin a slow host's clock may be behind
    assert use(url, "recent-token", recent) is None
