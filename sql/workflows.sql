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
-- crontick.workflows.steps.StepBatch: the steps that finished while this statement's previous one
-- was on the wire, from every job of the batch, in one statement (group commit): each job.step
-- returns only once its row is committed. Fenced like every outcome write: a step is written only
-- while its job is still running the attempt that ran it (a late finisher after a rescue records
-- nothing, and learns so from the ids missing from the answer). FOR SHARE holds the job row
-- against a concurrent rescue until this statement commits. `steps` is a JSON array of
-- [job_id, attempt, name, result as JSON text, seconds]: seconds, how long a job.step's function ran
-- (null for crontick's own rows), goes to the per-type ring of step durations (migration 0044, as
-- crontick_type_minutes is kept: a minute's row reset in place, rows in key order), read by GET /api/metrics.
-- A handler's result ('crontick:result') that an earlier run of the same job recorded (killed after it, before
-- its outcome was recorded) counts as written: the first one stands, and the re-run that returned again still
-- succeeds (without this it read as fenced and failed).
with step as (
    select (s ->> 0)::bigint as job_id, (s ->> 1)::int as attempt, s ->> 2 as name, (s ->> 3)::jsonb as result,
        (s ->> 4)::float8 as seconds
    from pg_catalog.json_array_elements(%(steps)s::json) s
), ours as materialized (
    select s.*, j.type from step s
    -- `is true`: the same test, matched by no partial index, so jobs is read by primary key
    -- (sql/functions/job_record_outcomes.sql says why).
    join {schema}.jobs j on j.id = s.job_id and (j.status = 'running') is true and j.attempts = s.attempt
    for share of j
), written as (
    insert into {schema}.job_steps (job_id, name, kind, status, attempt, result, created_at, finished_at)
    select o.job_id, o.name, 'step', 'done', o.attempt, o.result, now(), now()
    from ours o
    on conflict (job_id, name) do nothing
    returning job_id, name
), step_rollup as (
    insert into {schema}.crontick_step_minutes as m (type, slot, shard, bucket, minute, steps)
    -- Each operand of an operator typed as pg_catalog's operator takes it: an untyped literal beside a wider
    -- type would let an operator planted in `public` match better (tests/security/test_search_path.py).
    select o.type, (pg_catalog.floor(extract(epoch from now()) / 60::numeric)::bigint %% 1500::bigint)::smallint,
        (pg_catalog.pg_backend_pid() %% 4)::smallint,
        least(pg_catalog.floor(2::float8 * pg_catalog.ln(greatest(o.seconds * 1000::float8, 1::float8))
                               / pg_catalog.ln(2::float8)), 47::float8)::smallint,
        pg_catalog.date_trunc('minute', now()), pg_catalog.count(*)
    from ours o
    join written w on w.job_id = o.job_id and w.name = o.name
    where o.seconds is not null
    group by 1, 2, 3, 4, 5
    order by 1, 4
    on conflict (type, slot, shard, bucket) do update set
        steps = case when m.minute = excluded.minute then m.steps else 0 end + excluded.steps,
        minute = excluded.minute
)
select job_id, name from written
union all
select o.job_id, o.name from ours o
where o.name = 'crontick:result'
    and not exists (select from written w where w.job_id = o.job_id and w.name = o.name);

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
