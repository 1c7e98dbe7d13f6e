-- Named queries for durable steps (crontick.workflows, issue 21), loaded once by crontick.db.
-- Each block: who runs it and why.

-- name: job_steps_load
-- crontick.workflows.steps.StepBatch, when a handler of the batch first calls job.step, job.sleep
-- or job.wait_for: the recorded steps of every job of the batch with that handler's type, in one
-- statement (a batch whose handlers use no step sends none). Results travel as JSON text, decoded
-- step by step when asked for; a wait's wait_until is when it timed out, or would have (job.join
-- bounds its later waits by its first one's).
select job_id, name, kind, status, result::text, wait_until
from {schema}.job_steps
where job_id = any(%(ids)s::bigint[]);

-- name: job_steps_record
-- crontick.workflows.commit.GroupCommit, once per round: the steps that finished while the previous
-- round was on the wire, from every job of the batch, fenced on the attempt each job's tick claimed.
-- Returns the (job_id, name) of each step written. The statement is the function in
-- sql/functions/job_steps_record.sql, whose plan each connection keeps.
select job_id, name from {schema}.crontick_job_steps_record(%(steps)s::json);

-- name: job_signal
-- crontick.signal (Python), inside the caller's transaction: the SQL API's signal
-- (sql/functions/signal.sql), which every other driver calls directly. Returns the woken job's id,
-- or null when the signal was kept for a wait yet to begin, and the caller's transaction id, so that
-- a transaction's many signals wait for its commit in one kick thread (crontick.hooks.kick.AfterCommit).
select {schema}.{api_signal}(%(event_key)s, %(payload)s) as job_id,
    pg_catalog.pg_current_xact_id()::pg_catalog.text as transaction;

-- name: admin_job_steps
-- The admin's job page and GET /api/admin/jobs/{id}: the job's steps in the order they were
-- recorded, each result cut to a preview (never the whole value).
select name, kind, status, attempt, created_at, finished_at, event_key, wait_until,
    pg_catalog.left(result::text, %(preview)s) as preview, pg_catalog.length(result::text) as result_chars
from {schema}.job_steps
where job_id = %(id)s
order by created_at, name
limit %(limit)s;

-- name: signal_committed
-- crontick.hooks.kick.kick_after_commit, in its own thread and connection, after crontick.signal ran
-- inside a transaction still open: waits for the key's advisory lock, which that transaction holds
-- (sql/functions/signal.sql) until it commits or rolls back; then the kick's tick starts. Released
-- again at once (transaction-scoped, autocommit). It waits at most a minute: a transaction-local
-- lock_timeout of 60s, set first by the subquery, so that nothing outlives the statement on a pooled
-- server connection.
select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('crontick.signal:' || %(event_key)s, 0))
from (select pg_catalog.set_config('lock_timeout', '60s', true)) as bounded;

-- name: admin_job_signal
-- crontick.admin.jobs.store.signal_job (POST /api/admin/jobs/{id}/signal), in the action's
-- transaction after the job row is locked: an admin wakes this waiting job by hand with a payload,
-- as crontick.signal would on its wait's key (but this job, not the oldest waiter).
with wait as (
    update {schema}.job_steps s set status = 'signalled', result = %(payload)s, finished_at = now()
    where s.job_id = %(id)s and s.status = 'waiting'
    returning s.job_id
)
update {schema}.jobs j set status = 'pending', run_after = now(), updated_at = now()
where j.id = %(id)s and j.status = 'waiting'
returning id, type, payload, status, attempts, max_attempts, run_after, last_error, key,
    created_at, updated_at, finished_at, locked_until, (select count(*) from wait) as woken_steps;

-- name: job_cancel
-- crontick.cancel (Python), inside the caller's transaction: the SQL API's cancel (sql/functions/cancel.sql),
-- which every other driver calls directly. True when it cancelled the job (or asked a running one to stop).
select {schema}.{api_cancel}(%(id)s) as cancelled;

-- name: job_cancel_requested
-- crontick.workflows.children.check_cancel, at most every CANCEL_CHECK_SECONDS per batch, on the tick's connection:
-- which of the batch's running jobs crontick.cancel has asked to stop.
select id from {schema}.jobs where id = any(%(ids)s::bigint[]) and cancel_requested_at is not null;

-- name: job_spawn
-- job.spawn (crontick.workflows.children): a running job's children, enqueued once and recorded as its step
-- (sql/functions/job_spawn.sql). No row: fenced (the parent's attempt was taken over). `start_by` (a time) or
-- `start_by_seconds` (from now, by the database's clock), or neither: each child's deadline to start.
select ids from {schema}.crontick_job_spawn(%(parent)s, %(attempt)s, %(name)s, %(types)s::text[], %(payloads)s::jsonb[],
    %(run_after)s::timestamptz, %(max_attempts)s::int, %(priority)s::int, %(group_key)s::text, %(traceparent)s::text,
    coalesce(%(start_by)s::timestamptz, pg_catalog.now() + pg_catalog.make_interval(secs => %(start_by_seconds)s::float8)));

-- name: job_children
-- job.join (crontick.workflows.children): the jobs `ids` in their order, each with its parent, status and result (the
-- handler's return value, recorded as its step 'crontick:result'; null when none). A missing id: a null row.
select i.id, c.parent_id, c.status, r.result::text
from pg_catalog.unnest(%(ids)s::bigint[]) with ordinality i(id, n)
left join {schema}.jobs c on c.id = i.id
left join {schema}.job_steps r on r.job_id = c.id and r.name = 'crontick:result'
order by i.n;
