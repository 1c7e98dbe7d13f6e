"""The chaos scenarios in the order `make chaos` runs them, and each one's number in issue 10's list.

Each drives real processes, then counts what was lost, duplicated or forged (one module per theme).
"""

from __future__ import annotations

from collections.abc import Callable

from .clock import clock_skew
from .crashes import frozen, kill9, poison
from .hostile import auth_attack, bad_input
from .load import load
from .long import long_workflows
from .nul import nul_workflows
from .outages import connections, providers
from .pool import connections_pgbouncer
from .restart import database_restart, database_restart_pgbouncer
from .rig import Rig
from .scenario import Row, Sizes
from .workflows import workflows

SCENARIOS: list[Callable[[Rig, Sizes], Row]] = [
    auth_attack,
    load,
    kill9,
    poison,
    bad_input,
    providers,
    frozen,
    connections,
    connections_pgbouncer,
    database_restart,
    database_restart_pgbouncer,
    clock_skew,
    workflows,
    nul_workflows,
    long_workflows,
]
# Each scenario's number in issue 10's list, as its row starts: `python -m bench.chaos --only 10`.
NUMBERS: dict[Callable[[Rig, Sizes], Row], int] = {
    load: 1,
    kill9: 2,
    frozen: 3,
    database_restart: 4,
    database_restart_pgbouncer: 4,
    connections: 5,
    providers: 6,
    poison: 7,
    auth_attack: 8,
    bad_input: 9,
    clock_skew: 10,
    workflows: 11,
    nul_workflows: 12,
    long_workflows: 13,
}
