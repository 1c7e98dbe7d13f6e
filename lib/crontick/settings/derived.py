"""The defaults that depend on the host or on other rows (a row's `derive`), read once by Settings.from_env."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crontick.settings import variables
from crontick.settings.variables import LEASE_MARGIN_SECONDS, SLOW_JOB_SHARE_OF_BUDGET


def lease_after_budget(env: Mapping[str, str], got: Mapping[str, Any]) -> float:
    """CRONTICK_LEASE_SECONDS' default: the time budget plus LEASE_MARGIN_SECONDS."""
    return float(got["time_budget_seconds"]) + LEASE_MARGIN_SECONDS


def slow_within_budget(env: Mapping[str, str], got: Mapping[str, Any]) -> float:
    """CRONTICK_SLOW_JOB_SECONDS' default: SLOW_JOB_SHARE_OF_BUDGET of the time budget, so a job warns before the cut."""
    return float(got["time_budget_seconds"]) * SLOW_JOB_SHARE_OF_BUDGET


def kick_for_host(env: Mapping[str, str], got: Mapping[str, Any]) -> str:
    """http on AWS Lambda (it freezes once the handler returns), else inline (a long-running server,
    and Vercel, which waits for an ASGI app's background work)."""
    return "http" if variables.text(env, "AWS_LAMBDA_FUNCTION_NAME") else "inline"
