"""The queue and tick tests, collected again here so that they run through PgBouncer too.

They are the very same test functions as in tests/db and tests/http; this folder's conftest.py
makes their `database_url` (and so `conn`, the app and the CLI they start) go through a real
PgBouncer in transaction mode.
"""

from tests.db.test_drain_processes import *  # noqa: F403
from tests.db.test_enqueue_tx import *  # noqa: F403
from tests.db.test_job_outcomes import *  # noqa: F403
from tests.db.test_lease_rescue import *  # noqa: F403
from tests.db.test_queue_claim import *  # noqa: F403
from tests.http.test_tick_endpoint import *  # noqa: F403
