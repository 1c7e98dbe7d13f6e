"""The cut-off of a request that touches the database: after the budget, and over before any lease it took expires."""

from __future__ import annotations

import pytest

from crontick.db.cutoff import CUTOFF_MARGIN_SECONDS, cutoff_of
from crontick.settings import Settings


def test_by_default_a_tick_is_cut_two_seconds_past_its_budget() -> None:
    limit = cutoff_of(Settings())
    assert limit.seconds == Settings().time_budget_seconds + CUTOFF_MARGIN_SECONDS
    assert limit.seconds < limit.stop_seconds < Settings().lease_seconds


@pytest.mark.parametrize("budget", [0.1, 1.0, 3.0, 8.0, 900.0])
@pytest.mark.parametrize("lease_margin", [0.01, 0.3, 1.0, 30.0, 600.0])
def test_the_request_is_over_before_its_leases_can_expire(budget: float, lease_margin: float) -> None:
    limit = cutoff_of(Settings(time_budget_seconds=budget, lease_seconds=budget + lease_margin))
    assert budget < limit.seconds <= budget + CUTOFF_MARGIN_SECONDS
    assert limit.seconds < limit.stop_seconds < budget + lease_margin
