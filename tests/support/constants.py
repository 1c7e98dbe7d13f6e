"""Values every test folder shares: the checkout's root, the tick secret, the path a subprocess imports from,
the SQL functions kept in two signatures."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_SECRET = "test-secret-" + "x" * 32
# A subprocess (the `crontick` script, `crontick serve`) imports the test helper modules from ROOT
# and the same crontick as this process: the caller's PYTHONPATH (a worktree's lib/, say) follows.
PYTHONPATH = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
# Function files that also keep an older signature of their function, as a thin wrapper, because the
# code of the previous release still calls it during a rolling deploy: file name -> definitions held.
KEPT_OVERLOADS = {
    "inbound_event_record": 2,  # crontick_inbound_event_record without _priority
    "tick_probe": 2,  # crontick_tick_probe before migration 0034: 16 arguments, 14 columns
}
