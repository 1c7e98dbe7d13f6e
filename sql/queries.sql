-- Named queries, loaded once by crontick.db. Each block: who runs it and why.
-- Parameters are named (%(name)s); nothing here is ever built with string formatting.

-- name: job_insert
-- crontick.enqueue: one job inside the caller's transaction. With a key, an active job
-- holding that key wins and its id is returned instead (see jobs_key_active).
with inserted as (
    insert into jobs (type, payload, run_after, max_attempts, key)
    values (%(type)s, %(payload)s, coalesce(%(run_after)s, now()), coalesce(%(max_attempts)s, 4), %(key)s)
    on conflict (key) where key is not null and status in ('pending', 'running') do nothing
    returning id
)
select id from inserted
union all
select id from jobs
where key = %(key)s and status in ('pending', 'running') and not exists (select 1 from inserted)
limit 1;

-- name: job_insert_many
-- crontick.enqueue_many: a whole list of jobs in one statement (arrays, not one row per round trip).
insert into jobs (type, payload, run_after, max_attempts)
select t, p, coalesce(r, now()), coalesce(m, 4)
from unnest(%(types)s::text[], %(payloads)s::jsonb[], %(run_afters)s::timestamptz[], %(max_attempts)s::int[])
    as u(t, p, r, m)
returning id;

-- name: job_rescue_expired
-- Tick, first step: jobs whose lease passed while running belong to a tick that died.
-- Back to pending if attempts remain, else failed. SKIP LOCKED keeps parallel rescuers apart.
with expired as materialized (
    select id from jobs
    where status = 'running' and locked_until < %(now)s
    order by locked_until
    limit %(limit)s
    for update skip locked
), rescued as (
    update jobs j set
        status = case when j.attempts >= j.max_attempts then 'failed' else 'pending' end,
        run_after = %(now)s,
        locked_until = null,
        finished_at = case when j.attempts >= j.max_attempts then %(now)s end,
        last_error = 'LeaseExpired: attempt ' || j.attempts || ' of ' || j.max_attempts
            || ' was still running when its lease ended at ' || j.locked_until
            || ' (the tick running it was stopped before it could record an outcome)',
        updated_at = %(now)s
    from expired where j.id = expired.id
    returning j.status
)
select count(*) filter (where status = 'pending') as retried,
       count(*) filter (where status = 'failed') as failed
from rescued;

-- name: job_claim_due
-- Tick, second step: claim up to a batch of due jobs and lease them in one statement.
-- The CTE is MATERIALIZED so the planner cannot inline it into the UPDATE and re-evaluate
-- the LIMIT / SKIP LOCKED per row; the lock is taken exactly once per chosen row.
with due as materialized (
    select id from jobs
    where status = 'pending' and run_after <= %(now)s
    order by run_after, id
    limit %(limit)s
    for update skip locked
)
update jobs j set
    status = 'running',
    attempts = j.attempts + 1,
    locked_until = %(lease_until)s,
    updated_at = %(now)s
from due where j.id = due.id
returning j.id, j.type, j.payload, j.attempts, j.max_attempts, j.created_at;

-- name: job_record_outcomes
-- Tick, third step: every outcome of the batch in one statement. Fenced: a row changes only
-- while it is still running the attempt this tick claimed, so a late finisher whose job was
-- rescued and re-claimed by another tick changes nothing. Returns the ids that were written.
update jobs j set
    status = o.status,
    attempts = o.attempts,
    run_after = coalesce(o.run_after, j.run_after),
    -- A released job (never started: attempts handed back) keeps its previous attempt's error.
    last_error = case when o.attempts < o.claimed_attempt then j.last_error else o.last_error end,
    locked_until = null,
    finished_at = case when o.status in ('done', 'failed') then %(now)s end,
    updated_at = %(now)s
from unnest(%(ids)s::bigint[], %(claimed_attempts)s::int[], %(statuses)s::text[],
            %(attempts)s::int[], %(run_afters)s::timestamptz[], %(errors)s::text[])
    as o(id, claimed_attempt, status, attempts, run_after, last_error)
where j.id = o.id and j.status = 'running' and j.attempts = o.claimed_attempt
returning j.id;

-- name: tick_record
-- Tick, last step: log the tick for /api/health and say whether due jobs remain.
with logged as (
    insert into crontick_ticks (started_at, finished_at, source, summary)
    values (%(started_at)s, %(finished_at)s, %(source)s, %(summary)s)
    returning id
)
select exists (
    select 1 from jobs where status = 'pending' and run_after <= %(finished_at)s
) as jobs_due, (select id from logged) as tick_id;

-- name: tick_last
-- GET /api/health.
select max(finished_at) as last_tick_at from crontick_ticks;

-- name: job_list
-- crontick jobs [--status S].
select id, type, status, attempts, max_attempts, run_after, updated_at, last_error
from jobs
where %(status)s::text is null or status = %(status)s
order by id desc
limit %(limit)s;

-- name: job_retry
-- crontick retry JOB_ID: a failed (or done) job runs again, with a fresh set of attempts.
update jobs set
    status = 'pending', attempts = 0, run_after = now(), locked_until = null,
    finished_at = null, updated_at = now()
where id = %(id)s and status in ('failed', 'done')
returning id;

-- name: job_get_status
-- crontick retry: explain why a job could not be retried.
select status from jobs where id = %(id)s;
