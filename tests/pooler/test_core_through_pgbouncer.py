"""The queue and tick tests, collected again here so that they run through PgBouncer too.

They are the very same test functions as in tests/jobs, tests/tick, tests/app and tests/workflows: this
folder's conftest.py collects each file named in AGAIN a second time below this module, where this folder's
`database_url` (and so `conn`, the app and the CLI they start) goes through a real PgBouncer in
transaction mode. Nothing imports them: a test module is never imported by another.
"""

AGAIN = (
    "tests/tick/test_drain_processes.py",
    "tests/jobs/test_queue_tx.py",
    "tests/jobs/test_runner_outcomes.py",
    "tests/tick/test_claim_lease_rescue.py",
    "tests/tick/test_claim_queue.py",
    "tests/app/test_tick_endpoint.py",
    "tests/workflows/test_steps_sleep_wait.py",  # durable steps: recorded, parked and signalled through the pooler
    "tests/workflows/test_steps.py",
)
