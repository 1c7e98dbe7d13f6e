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
-- Each per-tick duty (crontick.tick.duties: reminders, schedules, rescue, silence, alerts,
-- retention) asks its own question here. What it passes in is its key of `_asks` (the jsonb its
-- module's asks() returns, under its name); what it reads back is its key of `duties`, an object
-- such as {"due": true, "next_at": "..."} that its module reads by name. Adding a duty: add its
-- check to `probe` (the first entry of an index), its `due` to `idle` below, and its key to
-- `duties` (and, for a time when it is next due, to the idle row's next_due_at). The signature
-- stays as it is: a body edit ships with every migrate, no migration needed.
-- The wake-ups duty asks for the first `bookings` rows of crontick_wakeups from now on (only with a waker set;
-- without one nothing is read): crontick_wakeup_ledger's array under `wakeups`.
-- `expired` (last, migration 0049): how many jobs the claim ended `cancelled` past their start_by (jobs.expired).
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
    _reminder_source text,     -- the caller's CRONTICK_REMINDER_SOURCE (migration 0016), checked below; null: no reminders
    _flow jsonb,               -- flow control's claim arguments (crontick.flow.claim_args); null: none declared
    _asks jsonb                -- each duty's parameters under its name (crontick.tick.duties.asks)
)
returns table (
    idle boolean, jobs json, now timestamptz, next_job_at timestamptz, throttled_until timestamptz, duties jsonb,
    expired int
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
), asked as (
    -- The duties' parameters, typed: reminder kinds with their windows as [kind, lead, floor] (seconds).
    select (select pg_catalog.array_agg(w.value ->> 0 order by w.ordinality)
            from pg_catalog.jsonb_array_elements(_asks -> 'reminders'::text -> 'windows'::text) with ordinality w) as kinds,
        (select pg_catalog.array_agg(pg_catalog.make_interval(secs => (w.value ->> 1)::float8) order by w.ordinality)
            from pg_catalog.jsonb_array_elements(_asks -> 'reminders'::text -> 'windows'::text) with ordinality w) as leads,
        (select pg_catalog.array_agg(pg_catalog.make_interval(secs => (w.value ->> 2)::float8) order by w.ordinality)
            from pg_catalog.jsonb_array_elements(_asks -> 'reminders'::text -> 'windows'::text) with ordinality w) as floors,
        coalesce((_asks -> 'schedules'::text ->> 'unsynced'::text)::boolean, false) as schedules_unsynced,
        (_asks -> 'silence'::text ->> 'after'::text)::float8 as silent_after,
        coalesce((_asks -> 'alerts'::text ->> 'on'::text)::boolean, false) as alerts_on,
        (_asks -> 'retention'::text ->> 'done_before'::text)::timestamptz as done_before,
        (_asks -> 'retention'::text ->> 'failed_before'::text)::timestamptz as failed_before,
        (_asks -> 'retention'::text ->> 'kept_before'::text)::timestamptz as kept_before,
        (_asks -> 'wakeups'::text ->> 'bookings'::text)::int as wakeup_rows
), claimed as materialized (
    select c.jobs, c.throttled_until, c.expired from clock k, {schema}.crontick_job_claim_due(k.now, _limit, _lease, _flow) c
), probe as materialized (
    select k.now, a.*,
        -- Held jobs (a group's, behind its head) are not due: their head is (sql/migrations/0017_flow_claim.sql).
        -- Nor are a paused type's, group's or rate limit's (sql/functions/job_next_at.sql, given _flow): a
        -- tick with only those pending is idle, and books no wake-up for them.
        -- Durable steps (issue 21): a waiting job's run_after is its wait's deadline, which the
        -- record statement acts on (crontick_job_record_outcomes wakes it), so it counts here too.
        least({schema}.crontick_job_next_at(_flow),
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
                 then {schema}.crontick_reminder_next_due(k.now, a.kinds, a.leads, a.floors) end
        ) as next_reminder_at,
        -- Schedules: the earliest next slot ('-infinity': not computed yet; 'infinity': dormant),
        -- due by the database's clock, as schedule_due reads it (now(), even when a test passes
        -- its own time); or this process has declarations it has not synced yet
        -- (crontick.schedules.needs_sync).
        (select min(next_at) from {schema}.crontick_schedules) as schedules_next_at,
        (select max(finished_at) from {schema}.crontick_ticks) as previous_tick_at,
        -- crontick.alerts: pending alerts due, when a URL is configured to send them to.
        a.alerts_on
            and coalesce((select min(next_attempt_at) from {schema}.crontick_alerts where status = 'pending') <= k.now, false)
            as alerts_due,
        -- crontick.retention: a job or tick record past its keep period, each read as the first
        -- entry of an index (tick records expire daily on any live system, so the runs they start
        -- also clear reminder and alert bookkeeping). Between a process's looks
        -- (crontick.retention.probe) the cutoffs are null.
        coalesce((select min(updated_at) from {schema}.jobs where status = 'done') < a.done_before, false)
            or coalesce((select min(updated_at) from {schema}.jobs where status = 'failed') < a.failed_before, false)
            or coalesce((select min(finished_at) from {schema}.crontick_ticks) < a.kept_before, false)
            as retention_due
    from clock k, asked a
), silence as (
    -- crontick.alerts: this tick ends a silence of the scheduler when the tick before it finished
    -- more than silent_after before it started (null silent_after: this process ticked recently,
    -- so no silence is possible). Named by that earlier tick, so concurrent ticks after one
    -- silence raise one alert, and only the tick whose insert won logs scheduler_silent.
    insert into {schema}.crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'scheduler_silent', 'scheduler', p.previous_tick_at,
        jsonb_build_object('silent_seconds', round(extract(epoch from p.now - p.previous_tick_at)),
                           'silent_after_seconds', p.silent_after),
        p.now, p.now, p.now
    from probe p
    where p.previous_tick_at < p.now - make_interval(secs => p.silent_after)
    on conflict on constraint crontick_alerts_once do nothing
    returning (body ->> 'silent_seconds')::float8 as silent_seconds
), checks as (
    select p.*,
        p.reminder_lease_expired or coalesce(p.next_reminder_at <= p.now, false) as reminders_due,
        coalesce(p.schedules_next_at <= now(), false) or p.schedules_unsynced as schedules_due,
        p.alerts_on and exists (select 1 from silence) as silenced,
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
    -- The jobs the claim expired (start_by) are counted in its jobs.expired.
    insert into {schema}.crontick_ticks (started_at, finished_at, source, summary)
    select i.now, i.now, _source,
        pg_catalog.jsonb_set(_summary, '{{jobs,expired}}', pg_catalog.to_jsonb((select c.expired from claimed c)))
            || jsonb_build_object('next_due_at', least(i.next_job_at, i.next_reminder_at, i.next_slot_at))
    from idle i
    where case when i.idle then set_config('synchronous_commit', 'off', true) = 'off' else false end
)
select i.idle, (select c.jobs from claimed c), i.now, i.next_job_at, (select c.throttled_until from claimed c),
    pg_catalog.jsonb_build_object(
        'reminders'::text, pg_catalog.jsonb_build_object('due'::text, i.reminders_due, 'next_at'::text, i.next_reminder_at),
        'schedules'::text, pg_catalog.jsonb_build_object('due'::text, i.schedules_due, 'next_at'::text, i.next_slot_at),
        'rescue'::text, pg_catalog.jsonb_build_object('due'::text, i.leases_expired),
        'silence'::text, pg_catalog.jsonb_build_object(
            'silent_seconds'::text, (select s.silent_seconds from silence s), 'previous_tick_at'::text, i.previous_tick_at),
        'alerts'::text, pg_catalog.jsonb_build_object('due'::text, i.alerts_due or i.silenced),
        'retention'::text, pg_catalog.jsonb_build_object('due'::text, i.retention_due)
    -- Only with a waker set (the wake-ups duty asks): the bookings it books from, with no statement of its own.
    ) || case when i.wakeup_rows > 0
              then pg_catalog.jsonb_build_object('wakeups'::text, pg_catalog.jsonb_build_object(
                  'bookings'::text, {schema}.crontick_wakeup_ledger(i.now, i.wakeup_rows)))
              else '{{}}'::jsonb end,
    (select c.expired from claimed c)
from idle i;
end
$$;

-- The signature before migration 0034 (16 arguments, 14 columns), which the previous release calls
-- during a rolling deploy: a thin wrapper, so one body does the work; it can go (with a migration
-- that drops it, see crontick.db.migrate) once no release that calls it is still served.
create or replace function {schema}.crontick_tick_probe(
    _now timestamptz,
    _limit int,
    _lease interval,
    _source text,
    _summary jsonb,
    _schedules_unsynced boolean,
    _kinds text[],
    _leads interval[],
    _floors interval[],
    _silent_after float8,
    _alerts_on boolean,
    _done_before timestamptz,
    _failed_before timestamptz,
    _kept_before timestamptz,
    _reminder_source text,
    _flow jsonb
)
returns table (
    idle boolean, jobs json, now timestamptz, next_job_at timestamptz, leases_expired boolean,
    reminders_due boolean, next_reminder_at timestamptz, schedules_due boolean, next_slot_at timestamptz,
    previous_tick_at timestamptz, alerts_due boolean, retention_due boolean, silent_seconds float8,
    throttled_until timestamptz
)
language sql
as $$
    select p.idle, p.jobs, p.now, p.next_job_at, (p.duties -> 'rescue'::text ->> 'due'::text)::boolean,
        (p.duties -> 'reminders'::text ->> 'due'::text)::boolean, (p.duties -> 'reminders'::text ->> 'next_at'::text)::timestamptz,
        (p.duties -> 'schedules'::text ->> 'due'::text)::boolean, (p.duties -> 'schedules'::text ->> 'next_at'::text)::timestamptz,
        (p.duties -> 'silence'::text ->> 'previous_tick_at'::text)::timestamptz, (p.duties -> 'alerts'::text ->> 'due'::text)::boolean,
        (p.duties -> 'retention'::text ->> 'due'::text)::boolean, (p.duties -> 'silence'::text ->> 'silent_seconds'::text)::float8,
        p.throttled_until
    from {schema}.crontick_tick_probe(_now, _limit, _lease, _source, _summary, _reminder_source, _flow,
        pg_catalog.jsonb_build_object(
            'reminders'::text, pg_catalog.jsonb_build_object('windows'::text, (
                select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(
                    _kinds[i], pg_catalog.date_part('epoch'::text, _leads[i]), pg_catalog.date_part('epoch'::text, _floors[i]))
                    order by i)
                from pg_catalog.generate_subscripts(_kinds, 1) i)),
            'schedules'::text, pg_catalog.jsonb_build_object('unsynced'::text, _schedules_unsynced),
            'silence'::text, pg_catalog.jsonb_build_object('after'::text, _silent_after),
            'alerts'::text, pg_catalog.jsonb_build_object('on'::text, _alerts_on),
            'retention'::text, pg_catalog.jsonb_build_object(
                'done_before'::text, _done_before, 'failed_before'::text, _failed_before, 'kept_before'::text, _kept_before)
        )) p;
$$;
