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
    select id, updated_at as started_at, locked_until from jobs
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
    returning j.id, j.type, j.status, j.attempts, j.last_error, expired.started_at, expired.locked_until
), alerted as (
    -- crontick.alerts: a job failed here for good raises its job_failed alert in this statement (an outbox).
    insert into crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'job_failed', 'job:' || r.id, %(now)s,
        jsonb_build_object('job_id', r.id, 'job_type', r.type, 'attempts', r.attempts, 'error', left(r.last_error, 500)),
        %(now)s, %(now)s, %(now)s
    from rescued r
    where r.status = 'failed'
    on conflict on constraint crontick_alerts_once do nothing
), attempt_log as (
    -- The attempts history: the attempt whose lease ran out, ended when its lease did.
    insert into job_attempts (job_id, attempt, started_at, finished_at, outcome, error)
    select id, attempts, started_at, locked_until, 'lease_expired', left(last_error, 4096)
    from rescued
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
with clock as (
    -- The tick's time: the caller's (tests fake time by passing it), else the DATABASE's clock,
    -- never the app host's, so hosts whose clocks disagree claim, lease and rescue alike. The
    -- statement returns it, and the rest of the tick uses it (crontick.tick.run_tick).
    select coalesce(%(now)s::timestamptz, now()) as now
), due as materialized (
    select id from jobs
    where status = 'pending' and run_after <= (select now from clock)
    order by run_after, id
    limit %(limit)s
    for update skip locked
), claimed as (
    update jobs j set
        status = 'running',
        attempts = j.attempts + 1,
        locked_until = k.now + %(lease)s::interval,
        updated_at = k.now
    from clock k
    where j.id = any(array(select id from due))
    returning j.id, j.type, j.payload, j.attempts, j.max_attempts, j.created_at, j.scheduled_for, j.schedule, j.snoozes
)
select
    -- Each payload travels as JSON text, decoded job by job: one payload too deep for Python's
    -- json module (jsonb accepts thousands of levels) then fails only its own job, not the batch.
    (select json_agg(json_build_array(
        c.id, c.type, c.payload::text, c.attempts, c.max_attempts, c.created_at, c.scheduled_for, c.schedule, c.snoozes) order by c.id)
     from claimed c) as jobs,
    coalesce((select min(locked_until) from jobs where status = 'running') < k.now, false) as expired,
    k.now
from clock k;

-- name: job_record_outcomes
-- Tick, last step: every outcome of the batch and the tick's log row, in one statement (one
-- round trip, one commit); crontick.queue.record_outcomes runs it without the log row.
-- Fenced on status and the claimed attempt; alerts and the attempts history written in the
-- same statement. The statement itself is the function in sql/migrations/0008_record_function.sql
-- (its comment says why a function: a plan cached per connection, without prepared statements).
-- jobs_due tells the tick whether to answer more: true. /api/health reads the log.
select written, succeeded, retried, failed, released, fenced, jobs_due, next_job_at, snoozed, alerts_due
from crontick_job_record_outcomes(
    %(now)s::timestamptz, %(done_ids)s::bigint[], %(done_attempts)s::int[], %(others)s::json, %(log)s::boolean,
    %(started_at)s::timestamptz, %(source)s::text, %(summary)s::jsonb, %(jobs)s::jsonb, %(next_other_at)s::timestamptz);

-- name: tick_last
-- GET /api/health.
select max(finished_at) as last_tick_at from crontick_ticks;

-- name: tick_probe
-- Tick, first statement: claim the due jobs (as job_claim_due does), and find out whether
-- anything else is due and when the next thing falls due. The checks read the first entry of
-- an index each (min(), not exists, so the plan stays the same whatever the statistics say).
-- When nothing is due, the same statement writes the tick's log row, and the tick ends there:
-- an idle tick is one round trip. Otherwise the tick runs only the steps whose check found
-- work (crontick.tick.run_tick), and a tick with only jobs to do is two round trips.
-- The checks read the snapshot from before the claim: next_job_at counts the jobs claimed here.
-- The claim is job_claim_due's, word for word (tests/perf/test_claim_statements.py holds them equal),
-- its `clock` included: every comparison below is with the database's time (k.now, p.now), which
-- the statement returns as `now` for the rest of the tick.
--
-- Adding a per-tick step (schedules, an alerts outbox, retention, ...): add ONE column to
-- `probe`, a timestamp `<step>_at` (e.g. (select min(next_at) from crontick_schedules)) or a
-- boolean `<step>_due` (e.g. exists (select 1 from <outbox> where status = 'pending')); add
-- it to `checks` below (a timestamp as `coalesce(<step>_at <= p.now, false)`) and, for a
-- timestamp, to next_due_at; then read it in crontick.probe.Probe. previous_tick_at (the last
-- tick's finished_at, read before this tick's own row exists) is there for scheduler-silence
-- detection. This statement must stay under psycopg's 4 KiB parse-cache limit (comment lines
-- are stripped at load; tests/alerts/test_alert_policy.py measures it).
with clock as (
    -- The tick's time: the caller's (tests fake time by passing it), else the DATABASE's clock,
    -- never the app host's, so hosts whose clocks disagree claim, lease and rescue alike. The
    -- statement returns it, and the rest of the tick uses it (crontick.tick.run_tick).
    select coalesce(%(now)s::timestamptz, now()) as now
), due_jobs as materialized (
    select id from jobs
    where status = 'pending' and run_after <= (select now from clock)
    order by run_after, id
    limit %(limit)s
    for update skip locked
), claimed as (
    update jobs j set
        status = 'running',
        attempts = j.attempts + 1,
        locked_until = k.now + %(lease)s::interval,
        updated_at = k.now
    from clock k
    where j.id = any(array(select id from due_jobs))
    returning j.id, j.type, j.payload, j.attempts, j.max_attempts, j.created_at, j.scheduled_for, j.schedule, j.snoozes
), probe as materialized (
    select k.now,
        (select min(run_after) from jobs where status = 'pending') as next_job_at,
        coalesce((select min(locked_until) from jobs where status = 'running') < k.now, false) as leases_expired,
        -- Reminders, as reminder_claim_due finds them: a row still 'sending' after its lease (its
        -- tick died mid-send), a failed row whose retry comes due, or, per kind, the first
        -- confirmed booking past the kind's floor without that kind's row (due once it is
        -- inside the window, at starts_at - lead).
        coalesce((select min(locked_until) from reminder_sends where status = 'sending') < k.now, false)
            as reminder_lease_expired,
        least(
            (select min(next_attempt_at) from reminder_sends where status = 'failed' and next_attempt_at is not null),
            (select min(u.first_at - w.lead)
             from unnest(%(kinds)s::text[], %(leads)s::interval[], %(floors)s::interval[]) as w(kind, lead, floor)
             cross join lateral (
                 select min(b.starts_at) as first_at from bookings b
                 where b.status = 'confirmed' and b.starts_at > k.now + w.floor
                   and not exists (select 1 from reminder_sends r where r.booking_id = b.id and r.kind = w.kind)
             ) u)
        ) as next_reminder_at,
        -- Schedules: the earliest next slot ('-infinity': not computed yet; 'infinity': dormant),
        -- due by the database's clock, as schedule_due reads it (now(), even when a test passes
        -- its own time); or this process has declarations it has not synced yet
        -- (crontick.schedules.needs_sync).
        (select min(next_at) from crontick_schedules) as schedules_next_at,
        (select max(finished_at) from crontick_ticks) as previous_tick_at,
        -- crontick.alerts: pending alerts due, when a URL is configured to send them to.
        %(alerts_on)s::boolean
            and coalesce((select min(next_attempt_at) from crontick_alerts where status = 'pending') <= k.now, false)
            as alerts_due,
        -- crontick.retention: a job or tick record past its keep period, each read as the first
        -- entry of an index (tick records expire daily on any live system, so the runs they start
        -- also clear reminder and alert bookkeeping; this statement must stay under 4 KiB).
        -- Between a process's looks (crontick.retention.probe) the cutoffs are null and fold away.
        coalesce((select min(updated_at) from jobs where status = 'done') < %(done_before)s::timestamptz, false)
            or coalesce((select min(updated_at) from jobs where status = 'failed') < %(failed_before)s::timestamptz, false)
            or coalesce((select min(finished_at) from crontick_ticks) < %(kept_before)s::timestamptz, false)
            as retention_due
    from clock k
), silence as (
    -- crontick.alerts: this tick ends a silence of the scheduler when the tick before it finished
    -- more than silent_after before it started (null silent_after: this process ticked recently,
    -- so no silence is possible). Named by that earlier tick, so concurrent ticks after one
    -- silence raise one alert, and only the tick whose insert won logs scheduler_silent.
    insert into crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'scheduler_silent', 'scheduler', p.previous_tick_at,
        jsonb_build_object('silent_seconds', round(extract(epoch from p.now - p.previous_tick_at)),
                           'silent_after_seconds', %(silent_after)s::float8),
        p.now, p.now, p.now
    from probe p
    where p.previous_tick_at < p.now - make_interval(secs => %(silent_after)s::float8)
    on conflict on constraint crontick_alerts_once do nothing
    returning (body ->> 'silent_seconds')::float8 as silent_seconds
), checks as (
    select p.*,
        p.reminder_lease_expired or coalesce(p.next_reminder_at <= p.now, false) as reminders_due,
        coalesce(p.schedules_next_at <= now(), false) or %(schedules_unsynced)s as schedules_due,
        %(alerts_on)s::boolean and exists (select 1 from silence) as silenced,
        case when isfinite(p.schedules_next_at) then p.schedules_next_at end as next_slot_at
    from probe p
), idle as (
    select d.*,
        not (coalesce(d.next_job_at <= d.now, false) or d.leases_expired or d.reminders_due or d.schedules_due
             or d.alerts_due or d.retention_due or d.silenced) as idle
    from checks d
), logged as (
    -- An idle tick's commit does not wait for the WAL flush (transaction-local, so safe behind a
    -- pooler): its log row is all it writes, and a crash could lose only that row. CASE makes
    -- sure a tick that claimed jobs (never idle) keeps the durable commit.
    insert into crontick_ticks (started_at, finished_at, source, summary)
    select i.now, i.now, %(source)s::text,
        %(summary)s::jsonb || jsonb_build_object('next_due_at', least(i.next_job_at, i.next_reminder_at, i.next_slot_at))
    from idle i
    where case when i.idle then set_config('synchronous_commit', 'off', true) = 'off' else false end
)
select idle,
    -- Payloads as JSON text, decoded job by job (see job_claim_due).
    (select json_agg(json_build_array(
        c.id, c.type, c.payload::text, c.attempts, c.max_attempts, c.created_at, c.scheduled_for, c.schedule, c.snoozes) order by c.id)
     from claimed c) as jobs,
    now, next_job_at, leases_expired, reminders_due, next_reminder_at, schedules_due, next_slot_at, previous_tick_at,
    alerts_due or silenced as alerts_due, retention_due, (select silent_seconds from silence) as silent_seconds
from idle;
