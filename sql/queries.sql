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
-- crontick.enqueue_many: a whole list of jobs in one statement. The list arrives as one JSON
-- array of [type, payload] pairs (cheaper to send than one array per column); rows are
-- inserted in list order so the returned ids follow it.
insert into jobs (type, payload, run_after, max_attempts)
select e.job ->> 0, e.job -> 1, coalesce(%(run_after)s, now()), coalesce(%(max_attempts)s, 4)
from jsonb_array_elements(%(jobs)s) with ordinality as e(job, n)
order by e.n
returning id;

-- name: job_rescue_expired
-- Tick, when the claim saw an expired lease: jobs whose lease passed while running belong to
-- a tick that died.
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
-- Tick: claim up to a batch of due jobs and lease them in one statement, and say whether some
-- running job's lease has passed (then the tick rescues and claims again: checking here spares
-- every tick a rescue statement). Both checks here and jobs_due below are written as min() so
-- they read the first entry of a partial index, never the table, whatever its statistics say.
-- The CTE is MATERIALIZED so the planner cannot inline it into the UPDATE and re-evaluate the
-- LIMIT / SKIP LOCKED per row; the lock is taken exactly once per chosen row.
-- `id = any(array(...))` makes the UPDATE find its rows by primary key whatever the table
-- statistics say (a join may be planned as a scan of the whole table).
-- The batch comes back as one JSON array of [id, type, payload, attempts, max_attempts,
-- created_at, scheduled_for, schedule, snoozes]: one value to decode instead of nine per job.
with due as materialized (
    select id from jobs
    where status = 'pending' and run_after <= %(now)s
    order by run_after, id
    limit %(limit)s
    for update skip locked
), claimed as (
    update jobs j set
        status = 'running',
        attempts = j.attempts + 1,
        locked_until = %(lease_until)s,
        updated_at = %(now)s
    where j.id = any(array(select id from due))
    returning j.id, j.type, j.payload, j.attempts, j.max_attempts, j.created_at, j.scheduled_for, j.schedule, j.snoozes
)
select
    -- Each payload travels as JSON text, decoded job by job: one payload too deep for Python's
    -- json module (jsonb accepts thousands of levels) then fails only its own job, not the batch.
    (select json_agg(json_build_array(
        c.id, c.type, c.payload::text, c.attempts, c.max_attempts, c.created_at, c.scheduled_for, c.schedule, c.snoozes) order by c.id)
     from claimed c) as jobs,
    coalesce((select min(locked_until) from jobs where status = 'running') < %(now)s, false) as expired;

-- name: job_record_outcomes
-- Tick, last step: every outcome of the batch and the tick's log row, in one statement (one
-- round trip, one commit); crontick.queue.record_outcomes runs it without the log row.
-- Fenced: a row changes only while it is still running the attempt this tick claimed, so a
-- late finisher whose job was rescued and re-claimed by another tick changes nothing.
-- The counts are made here from what was written, so a fenced outcome counts only as fenced.
-- jobs_due tells the tick whether to answer more: true. /api/health reads the log.
-- The outcomes arrive as one JSON array of [id, claimed_attempt, status, attempts, run_after,
-- last_error, snoozed]: serialised once, in C, where seven arrays would be encoded element by element.
with outcome as materialized (
    select (o ->> 0)::bigint as id, (o ->> 1)::int as claimed_attempt, o ->> 2 as status,
        (o ->> 3)::int as attempts, (o ->> 4)::timestamptz as run_after, o ->> 5 as last_error,
        coalesce((o ->> 6)::boolean, false) as snoozed
    from json_array_elements(%(outcomes)s::json) o
), written as (
    update jobs j set
        status = o.status,
        attempts = o.attempts,
        run_after = coalesce(o.run_after, j.run_after),
        -- A released job (never started: attempts handed back) keeps its previous attempt's error.
        last_error = case when o.attempts < o.claimed_attempt then j.last_error else o.last_error end,
        locked_until = null,
        finished_at = case when o.status in ('done', 'failed') then %(now)s end,
        -- crontick.Snooze: the attempt was handed back (attempts above); count the snooze, which is bounded.
        snoozes = j.snoozes + case when o.snoozed then 1 else 0 end,
        updated_at = %(now)s
    from outcome o
    where j.id = o.id and j.status = 'running' and j.attempts = o.claimed_attempt
    returning j.id
), counts as (
    select
        count(*) filter (where w.id is not null and o.status = 'done') as succeeded,
        count(*) filter (where w.id is not null and o.status = 'pending' and o.attempts >= o.claimed_attempt) as retried,
        count(*) filter (where w.id is not null and o.status = 'failed') as failed,
        count(*) filter (where w.id is not null and o.status = 'pending' and o.attempts < o.claimed_attempt and not o.snoozed) as released,
        count(*) filter (where w.id is null) as fenced,
        count(*) filter (where w.id is not null and o.snoozed) as snoozed
    from outcome o
    left join written w on w.id = o.id
), logged as (
    insert into crontick_ticks (started_at, finished_at, source, summary)
    select %(started_at)s::timestamptz, %(now)s, %(source)s::text,
        %(summary)s::jsonb || jsonb_build_object('jobs', %(jobs)s::jsonb || to_jsonb(c))
    from counts c
    where %(log)s::boolean
)
select array(select id from written) as written,
    c.succeeded, c.retried, c.failed, c.released, c.fenced,
    coalesce((select min(run_after) from jobs where status = 'pending') <= %(now)s, false) as jobs_due,
    c.snoozed
from counts c;

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
