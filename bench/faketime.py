"""Run a command with its wall clock moved (Debian's `faketime`), for the clock-skew tests and chaos scenario."""

from __future__ import annotations

import os
import shutil

REQUIRE_VARIABLE = "CRONTICK_REQUIRE_FAKETIME"
MISSING = "faketime is not installed (apt-get install faketime)"


def binary() -> str | None:
    return shutil.which("faketime") or next(
        (
            p
            for p in ("/usr/bin/faketime", "/usr/local/bin/faketime", "/opt/homebrew/bin/faketime")
            if os.path.exists(p)
        ),
        None,
    )


def required() -> bool:
    """CI (.ci/run) installs faketime and sets CRONTICK_REQUIRE_FAKETIME=1: then a missing one is a failure."""
    return bool(os.environ.get(REQUIRE_VARIABLE))


def skewed(argv: list[str], offset_seconds: int, faketime: str) -> list[str]:
    """`argv` run with its wall clock `offset_seconds` off (monotonic clocks untouched: set
    FAKETIME_DONT_FAKE_MONOTONIC=1 in its environment, see ENV)."""
    return [faketime, "-f", f"{offset_seconds:+d}", *argv]


# Timeouts, budgets and asyncio run on the monotonic clock, which must keep real time.
ENV = {"FAKETIME_DONT_FAKE_MONOTONIC": "1"}
