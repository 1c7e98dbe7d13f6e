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
    returning j.id, j.type, j.status, j.attempts, j.last_error
), alerted as (
    -- crontick.alerts: a job failed here for good raises its job_failed alert in this statement (an outbox).
    insert into crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'job_failed', 'job:' || r.id, %(now)s,
        jsonb_build_object('job_id', r.id, 'job_type', r.type, 'attempts', r.attempts, 'error', left(r.last_error, 500)),
        %(now)s, %(now)s, %(now)s
    from rescued r
    where r.status = 'failed'
    on conflict on constraint crontick_alerts_once do nothing
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
    (select json_agg(json_build_array(
        c.id, c.type, c.payload, c.attempts, c.max_attempts, c.created_at, c.scheduled_for, c.schedule, c.snoozes) order by c.id)
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
    returning j.id, j.type, j.status, j.attempts, j.last_error
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
), job_alerts as (
    -- crontick.alerts: each job written 'failed' raises one job_failed alert here (an outbox).
    insert into crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'job_failed', 'job:' || w.id, %(now)s,
        jsonb_build_object('job_id', w.id, 'job_type', w.type, 'attempts', w.attempts, 'error', left(w.last_error, 500)),
        %(now)s, %(now)s, %(now)s
    from written w
    where w.status = 'failed'
    on conflict on constraint crontick_alerts_once do nothing
    returning 1
), silence as (
    -- crontick.alerts: this tick ends a silence of the scheduler when the tick before it (this
    -- statement's snapshot does not see its own log row) finished more than silent_after ago.
    -- The silence is named by that earlier tick, so concurrent ticks after it raise one alert,
    -- and only the tick whose insert won reports silent_seconds (and logs scheduler_silent).
    insert into crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'scheduler_silent', 'scheduler', p.finished_at,
        jsonb_build_object('silent_seconds', round(extract(epoch from %(started_at)s::timestamptz - p.finished_at)),
                           'last_tick_at', p.finished_at, 'silent_after_seconds', %(silent_after)s::float8),
        %(now)s, %(now)s, %(now)s
    from (select max(finished_at) as finished_at from crontick_ticks) p
    where %(log)s::boolean
      and p.finished_at < %(started_at)s::timestamptz - make_interval(secs => %(silent_after)s::float8)
    on conflict on constraint crontick_alerts_once do nothing
    returning (body ->> 'silent_seconds')::float8 as silent_seconds
)
select array(select id from written) as written,
    c.succeeded, c.retried, c.failed, c.released, c.fenced,
    coalesce((select min(run_after) from jobs where status = 'pending') <= %(now)s, false) as jobs_due,
    c.snoozed,
    (select silent_seconds from silence) as silent_seconds,
    -- crontick.alerts: whether to send, read from the first entry of a partial index (or from
    -- what this statement wrote), so a tick with nothing pending spends no statement on alerts.
    exists (select 1 from job_alerts) or exists (select 1 from silence)
        or coalesce((select min(next_attempt_at) from crontick_alerts where status = 'pending') <= %(now)s, false)
        as alerts_due,
    -- crontick.retention: whether any table holds a row past its keep period, each read as the
    -- first entry of an index; null cutoffs (a record without the tick) make it false.
    coalesce((select min(updated_at) from jobs where status = 'done') < %(done_before)s::timestamptz, false)
        or coalesce((select min(updated_at) from jobs where status = 'failed') < %(failed_before)s::timestamptz, false)
        or coalesce((select min(finished_at) from crontick_ticks) < %(kept_before)s::timestamptz, false)
        or coalesce((select min(updated_at) from crontick_alerts) < %(kept_before)s::timestamptz, false)
        or coalesce((select min(updated_at) from reminder_sends where status <> 'sending' and next_attempt_at is null)
                    < %(kept_before)s::timestamptz, false)
        as retention_due
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
