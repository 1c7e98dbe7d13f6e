"""The queue and tick tests, collected again here so that they run through PgBouncer too.

They are the very same test functions as in tests/db and tests/http: this folder's conftest.py
collects each file named in AGAIN a second time below this module, where this folder's
`database_url` (and so `conn`, the app and the CLI they start) goes through a real PgBouncer in
transaction mode. Nothing imports them: a test module is never imported by another.
"""

AGAIN = (
    "tests/db/test_drain_processes.py",
    "tests/db/test_enqueue_tx.py",
    "tests/db/test_job_outcomes.py",
    "tests/db/test_lease_rescue.py",
    "tests/db/test_queue_claim.py",
    "tests/http/test_tick_endpoint.py",
    "tests/workflows/test_sleep_wait.py",  # durable steps: recorded, parked and signalled through the pooler
    "tests/workflows/test_steps.py",
)
