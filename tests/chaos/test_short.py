"""The short version of each `make chaos` scenario (seconds each): real `crontick serve` processes,
PostgreSQL and a local provider; nothing lost, nothing duplicated, nothing forged accepted."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from bench.chaos.__main__ import summary
from bench.chaos.rig import Rig, rig
from bench.chaos.scenario import SHORT, Row
from bench.chaos.scenarios import SCENARIOS


@pytest.fixture(scope="module")
def chaos_rig(admin_url: str) -> Iterator[Rig]:
    with rig(admin_url) as r:
        yield r


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_scenario(chaos_rig: Rig, scenario: Callable[[Rig, object], Row]) -> None:
    row = scenario(chaos_rig, SHORT)
    if row.skipped and row.ok:  # a missing tool that CI requires fails instead (row.ok is then false)
        pytest.skip(row.skipped)
    assert (row.lost, row.duplicated, row.forged_accepted) == (0, 0, 0), row
    assert row.ok, row


def test_the_summary_line_counts_every_row() -> None:
    rows = [
        Row("1 a", "", "", lost=1),
        Row("2 b", "", "", duplicated=2, forged_accepted=3, ok=False),
        Row("2 b, PgBouncer", "", "", lost=1),  # a second row of scenario 2
    ]
    assert summary(rows) == "chaos: 2 scenarios, 2 lost, 2 duplicated, 3 forged accepted"
