-- crontick_tick_probe: the tick's first statement. Called by sql/queries.sql tick_probe
-- (crontick.tick.probe.look): claim the due jobs (with crontick_job_claim_due), and find out
-- whether anything else is due and when the next thing falls due. The checks read the first entry
-- of an index each (min(), not exists, so the plan stays the same whatever the statistics say).
-- When nothing is due, the same statement writes the tick's log row, and the tick ends there: an
-- idle tick is one round trip. Otherwise the tick runs only the steps whose check found work
-- (crontick.tick.pipeline.run_tick), and a tick with only jobs to do is two round trips.
-- A function (issue 13: an idle tick at 1.74x GET /api/health): crontick sends no prepared
-- statement (it must work through transaction poolers), so the 4 KB probe was parsed, analysed
-- and planned on every tick, about 1.1 ms of its 1.3 ms on the server. PL/pgSQL keeps the plan of
-- each statement it runs for the life of the server connection (a cache a pooler never sees), and
-- force_generic_plan makes it one plan from the first call on: the arguments never change the
-- plan's shape.
-- The checks read this statement's snapshot; the claim, a function of its own, takes a newer one
-- (a volatile function's statement does), so it may claim a job committed after the checks
-- looked: a tick that claimed jobs is never idle, whatever the checks saw.
-- Every comparison is with the database's time (k.now, p.now), returned as `now`.
--
-- Adding a per-tick step (schedules, an alerts outbox, retention, ...): add ONE column to
-- `probe`, a timestamp `<step>_at` (e.g. (select min(next_at) from crontick_schedules)) or a
-- boolean `<step>_due` (e.g. exists (select 1 from <outbox> where status = 'pending')); add
-- it to `checks` below (a timestamp as `coalesce(<step>_at <= p.now, false)`) and, for a
-- timestamp, to next_due_at; then return it and read it in crontick.tick.probe.Probe. A new
-- output column changes the function's return type: see lib/crontick/db/migrate.py.
-- previous_tick_at (the last tick's finished_at, read before this tick's own row exists) is
-- there for scheduler-silence detection.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_tick_probe(
    _now timestamptz,          -- null: the database's clock
    _limit int,                -- the most jobs to claim
    _lease interval,
    _source text,              -- the idle tick's log row: its source and summary
    _summary jsonb,
    _schedules_unsynced boolean,  -- this process has declarations it has not synced yet
    _kinds text[],             -- reminder kinds with their windows (now + floor, now + lead]
    _leads interval[],
    _floors interval[],
    _silent_after float8,      -- null: no silence possible (this process ticked recently)
    _alerts_on boolean,        -- an alert URL is configured
    _done_before timestamptz,  -- retention cutoffs; null between crontick.retention's looks
    _failed_before timestamptz,
    _kept_before timestamptz,
    _reminder_source text,     -- the caller's CRONTICK_REMINDER_SOURCE (migration 0016), checked below; null: no reminders
    _flow jsonb                -- flow control's claim arguments (crontick.flow.claim_args); null: none declared
)
returns table (
    idle boolean, jobs json, now timestamptz, next_job_at timestamptz, leases_expired boolean,
    reminders_due boolean, next_reminder_at timestamptz, schedules_due boolean, next_slot_at timestamptz,
    previous_tick_at timestamptz, alerts_due boolean, retention_due boolean, silent_seconds float8,
    throttled_until timestamptz
)
language plpgsql
set plan_cache_mode = force_generic_plan
-- Reminders from the user's own table (issue 19): on a big source without an index on starts_at the
-- planner's estimate passes jit_above_cost, and JIT compiled this small statement on every tick
-- (0.9 s of a 1 s idle tick over 20,000 rows, bench/reminder_source.py). It never pays off here.
set jit = off
as $$
#variable_conflict use_column
begin
-- Reminders from the user's own table (issue 19): this body reads the source `crontick migrate`
-- composed it for ({reminder_source}). A process whose CRONTICK_REMINDER_SOURCE names another one
-- would see reminders due in one table and claim them from another, so it is refused here, at the
-- cost of one comparison (crontick.db.source turns SQLSTATE CTRS0 into ReminderSourceError), and
-- crontick.tick.probe.look probes again with _reminder_source null: reminders stop, jobs run.
if _reminder_source is not null and _reminder_source is distinct from {reminder_source_label} then
    raise exception using errcode = 'CTRS0',
        message = format('CRONTICK_REMINDER_SOURCE: expected %s, the source crontick migrate last ran with, got: %s '
                         '(run crontick migrate with this setting)', {reminder_source_label}, _reminder_source);
end if;
return query
with clock as (
    select coalesce(_now, now()) as now
), claimed as materialized (
    select c.jobs, c.throttled_until from clock k, {schema}.crontick_job_claim_due(k.now, _limit, _lease, _flow) c
), probe as materialized (
    select k.now,
        -- Held jobs (a group's, behind its head) are not due: their head is (sql/migrations/0017_flow_claim.sql).
        -- Durable steps (issue 21): a waiting job's run_after is its wait's deadline, which the
        -- record statement acts on (crontick_job_record_outcomes wakes it), so it counts here too.
        least((select min(run_after) from {schema}.jobs where status = 'pending' and not held),
              (select min(run_after) from {schema}.jobs where status = 'waiting')) as next_job_at,
        exists (select 1 from {schema}.jobs where status = 'running' and locked_until < k.now) as leases_expired,
        -- Reminders, as reminder_claim_due finds them: a row still 'sending' after its lease (its
        -- tick died mid-send), a failed row whose retry comes due, or, per kind, the first
        -- confirmed booking past the kind's floor without that kind's row (due once it is
        -- inside the window, at starts_at - lead).
        exists (select 1 from {schema}.reminder_sends where status = 'sending' and locked_until < k.now)
            as reminder_lease_expired,
        least(
            (select min(next_attempt_at) from {schema}.reminder_sends where status = 'failed' and next_attempt_at is not null),
            -- Null (reminders stopped, crontick.tick.probe.look): the source is not read at all.
            case when _reminder_source is not null
                 then {schema}.crontick_reminder_next_due(k.now, _kinds, _leads, _floors) end
        ) as next_reminder_at,
        -- Schedules: the earliest next slot ('-infinity': not computed yet; 'infinity': dormant),
        -- due by the database's clock, as schedule_due reads it (now(), even when a test passes
        -- its own time); or this process has declarations it has not synced yet
        -- (crontick.schedules.needs_sync).
        (select min(next_at) from {schema}.crontick_schedules) as schedules_next_at,
        (select max(finished_at) from {schema}.crontick_ticks) as previous_tick_at,
        -- crontick.alerts: pending alerts due, when a URL is configured to send them to.
        _alerts_on
            and coalesce((select min(next_attempt_at) from {schema}.crontick_alerts where status = 'pending') <= k.now, false)
            as alerts_due,
        -- crontick.retention: a job or tick record past its keep period, each read as the first
        -- entry of an index (tick records expire daily on any live system, so the runs they start
        -- also clear reminder and alert bookkeeping). Between a process's looks
        -- (crontick.retention.probe) the cutoffs are null.
        coalesce((select min(updated_at) from {schema}.jobs where status = 'done') < _done_before, false)
            or coalesce((select min(updated_at) from {schema}.jobs where status = 'failed') < _failed_before, false)
            or coalesce((select min(finished_at) from {schema}.crontick_ticks) < _kept_before, false)
            as retention_due
    from clock k
), silence as (
    -- crontick.alerts: this tick ends a silence of the scheduler when the tick before it finished
    -- more than silent_after before it started (null silent_after: this process ticked recently,
    -- so no silence is possible). Named by that earlier tick, so concurrent ticks after one
    -- silence raise one alert, and only the tick whose insert won logs scheduler_silent.
    insert into {schema}.crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'scheduler_silent', 'scheduler', p.previous_tick_at,
        jsonb_build_object('silent_seconds', round(extract(epoch from p.now - p.previous_tick_at)),
                           'silent_after_seconds', _silent_after),
        p.now, p.now, p.now
    from probe p
    where p.previous_tick_at < p.now - make_interval(secs => _silent_after)
    on conflict on constraint crontick_alerts_once do nothing
    returning (body ->> 'silent_seconds')::float8 as silent_seconds
), checks as (
    select p.*,
        p.reminder_lease_expired or coalesce(p.next_reminder_at <= p.now, false) as reminders_due,
        coalesce(p.schedules_next_at <= now(), false) or _schedules_unsynced as schedules_due,
        _alerts_on and exists (select 1 from silence) as silenced,
        case when isfinite(p.schedules_next_at) then p.schedules_next_at end as next_slot_at
    from probe p
), idle as (
    select d.*,
        not (coalesce(d.next_job_at <= d.now, false) or d.leases_expired or d.reminders_due or d.schedules_due
             or d.alerts_due or d.retention_due or d.silenced)
        and (select c.jobs from claimed c) is null as idle
    from checks d
), logged as (
    -- An idle tick's commit does not wait for the WAL flush (transaction-local, so safe behind a
    -- pooler; set_config's local setting outlives this function, whose SET clause names only
    -- plan_cache_mode): its log row is all it writes, and a crash could lose only that row. CASE
    -- makes sure a tick that claimed jobs (never idle) keeps the durable commit.
    insert into {schema}.crontick_ticks (started_at, finished_at, source, summary)
    select i.now, i.now, _source,
        _summary || jsonb_build_object('next_due_at', least(i.next_job_at, i.next_reminder_at, i.next_slot_at))
    from idle i
    where case when i.idle then set_config('synchronous_commit', 'off', true) = 'off' else false end
)
select i.idle, (select c.jobs from claimed c), i.now, i.next_job_at, i.leases_expired, i.reminders_due,
    i.next_reminder_at, i.schedules_due, i.next_slot_at, i.previous_tick_at, i.alerts_due or i.silenced,
    i.retention_due, (select s.silent_seconds from silence s), (select c.throttled_until from claimed c)
from idle i;
end
$$;
