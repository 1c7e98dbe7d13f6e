"""CRONTICK_SLOW_JOB_SECONDS: its default is half the time budget, so a job warns well before the budget cuts it."""

from __future__ import annotations

import pytest

from crontick.errors import ConfigError
from crontick.settings import SLOW_JOB_SHARE_OF_BUDGET, Settings


def test_the_default_is_half_the_budget_and_follows_it() -> None:
    assert SLOW_JOB_SHARE_OF_BUDGET == 0.5
    assert Settings.from_env({}).slow_job_seconds == 4.0  # the default 8 s budget
    assert Settings.from_env({"CRONTICK_TIME_BUDGET_SECONDS": "3"}).slow_job_seconds == 1.5
    assert Settings().slow_job_seconds == 4.0  # built in code, as tests and apps do


def test_a_value_is_read_and_a_bad_one_fails_naming_the_variable() -> None:
    assert Settings.from_env({"CRONTICK_SLOW_JOB_SECONDS": "2.5"}).slow_job_seconds == 2.5
    assert Settings.from_env({"CRONTICK_SLOW_JOB_SECONDS": "0"}).slow_job_seconds == 0.0  # every job warns
    for bad in ("-1", "soon"):
        with pytest.raises(ConfigError, match="CRONTICK_SLOW_JOB_SECONDS"):
            Settings.from_env({"CRONTICK_SLOW_JOB_SECONDS": bad})
