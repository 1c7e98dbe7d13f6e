"""What every chaos scenario takes and gives: how much it does (Sizes: FULL for `make chaos`, SHORT for the
test suite) and the one row it prints (Row). bench/chaos/scenarios.py lists the scenarios."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sizes:
    """How much each scenario does: `make chaos` uses FULL, the test suite SHORT."""

    auth_requests: int
    jobs: int
    bookings: int
    callers: int
    kills: int
    restarts: int
    bad_requests: int
    deadline_seconds: float
    events: int  # inbound webhooks (GitHub deliveries) in the load scenario; every fifth is sent twice
    hook_replays: int = 20  # scenario 8: a captured GitHub delivery sent again under new delivery ids
    junk_requests: int = 10  # scenario 8: refused Twilio requests, half of them 1 MiB of form fields
    skew_window_seconds: float = 150.0  # scenario 10: jobs, reminders and slots fall due over this long
    workflows: int = 2_000  # scenario 11: three-step workflows
    workflow_kill_every: tuple[float, float] = (2.0, 4.0)  # scenario 11: seconds between kills (uniform)
    nul_workflows: int = 1_000  # scenario 12: two-step workflows, one in five with a NUL
    long_workflows: int = 300  # scenario 13: workflows longer than a tick's budget (a map, then a send)


FULL = Sizes(
    auth_requests=10_000,
    jobs=20_000,
    bookings=2_000,
    callers=16,
    kills=20,
    restarts=5,
    bad_requests=2_000,
    deadline_seconds=600,
    events=500,
    hook_replays=200,
    junk_requests=100,
)
SHORT = Sizes(
    auth_requests=300,
    jobs=300,
    bookings=30,
    callers=4,
    kills=2,
    restarts=1,
    bad_requests=150,
    deadline_seconds=60,
    events=30,
    skew_window_seconds=8,
    workflows=60,
    workflow_kill_every=(0.5, 1.5),
    nul_workflows=100,
    long_workflows=20,
)


@dataclass(frozen=True)
class Row:
    scenario: str
    amount: str
    verified: str
    lost: int = 0
    duplicated: int = 0
    forged_accepted: int = 0
    ok: bool = True
    skipped: str = ""  # why it did not run (a missing tool); the short test skips with this reason
