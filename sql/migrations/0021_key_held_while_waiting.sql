-- 0021: a job parked by job.wait_for keeps its key. A waiting job has not ended (CONTRACT.md: "a
-- key that a job already holds enqueues nothing"), so an enqueue with its key must find it
-- rather than add a second job that would do the same work once the first wakes. The index's
-- predicate and the ON CONFLICT of sql/functions/enqueue.sql name the same statuses.
drop index {schema}.jobs_key_active;
create unique index jobs_key_active on {schema}.jobs (key)
    where key is not null and status in ('pending', 'running', 'waiting');
