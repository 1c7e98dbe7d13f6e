-- Named queries for recurring schedules (crontick.schedules). Python computes every slot with
-- cronsim; these statements only read the schedules' cursors and write what was decided, for
-- all schedules at once, so a tick costs the same number of statements however many there are.

-- name: schedule_due
-- Tick, first schedule statement (skipped when the process declares no schedules): the
-- database's clock and the schedules due at it (next_at <= now()), each with its cursor.
-- With %(declared)s (a JSON array of [name, cron, time_zone, catch_up, job_type], sent once per
-- process and database, and again when another process synced a different set) it also syncs
-- the declarations first: a new schedule starts at now() (no backfill); a changed cron or time
-- zone keeps the cursor but never behind now(), so neither expression is backfilled, and the
-- old definition is kept in previous_cron; a schedule no longer declared goes dormant
-- (next_at = 'infinity'), its slot rows kept. Rows written here come back through `synced`:
-- the outer select reads the snapshot from before this statement.
with declared as materialized (
    select d ->> 0 as name, d ->> 1 as cron, d ->> 2 as time_zone, d ->> 3 as catch_up, d ->> 4 as job_type
    from pg_catalog.jsonb_array_elements(coalesce(%(declared)s::jsonb, '[]'::jsonb)) d
), synced as (
    insert into {schema}.crontick_schedules as s (name, cron, time_zone, catch_up, job_type, evaluated_until, next_at)
    select name, cron, time_zone, catch_up, job_type, now(), '-infinity' from declared
    on conflict (name) do update set
        cron = excluded.cron,
        time_zone = excluded.time_zone,
        catch_up = excluded.catch_up,
        job_type = excluded.job_type,
        evaluated_until = case
            when (s.cron, s.time_zone) is distinct from (excluded.cron, excluded.time_zone) or s.next_at = 'infinity'
            then greatest(s.evaluated_until, now()) else s.evaluated_until end,
        next_at = case
            when (s.cron, s.time_zone) is distinct from (excluded.cron, excluded.time_zone) or s.next_at = 'infinity'
            then '-infinity' else s.next_at end,
        previous_cron = case when s.cron is distinct from excluded.cron then s.cron else s.previous_cron end,
        previous_time_zone = case
            when s.time_zone is distinct from excluded.time_zone then s.time_zone else s.previous_time_zone end,
        changed_at = case
            when (s.cron, s.time_zone) is distinct from (excluded.cron, excluded.time_zone) then now() else s.changed_at end,
        updated_at = now()
    where (s.cron, s.time_zone, s.catch_up, s.job_type) is distinct from
            (excluded.cron, excluded.time_zone, excluded.catch_up, excluded.job_type)
        or s.next_at = 'infinity'
    returning s.name, s.cron, s.time_zone, s.evaluated_until
), dormant as (
    update {schema}.crontick_schedules s set next_at = 'infinity', updated_at = now()
    where %(declared)s::jsonb is not null and s.next_at <> 'infinity'
        and s.name not in (select name from declared)
    returning s.name
), recorded as (
    insert into {schema}.crontick_schedule_declared (digest, synced_at)
    select %(digest)s::text, now() where %(declared)s::jsonb is not null
    on conflict (only_row) do update set digest = excluded.digest, synced_at = excluded.synced_at
    returning digest
)
select now() as now,
    coalesce((select digest from recorded), (select digest from {schema}.crontick_schedule_declared)) as digest,
    (select count(*) from dormant) as dormant,
    -- The fifth element: whether the schedule is paused (issue 23; a crontick_pauses row of kind
    -- 'schedule'), read here for due schedules only, so an idle tick reads nothing more.
    coalesce((select pg_catalog.json_agg(pg_catalog.json_build_array(d.name, d.cron, d.time_zone, d.evaluated_until,
                exists (select 1 from {schema}.crontick_pauses p where p.kind = 'schedule' and p.name = d.name))
              order by d.name) from (
        select name, cron, time_zone, evaluated_until from synced
        union all
        select name, cron, time_zone, evaluated_until from {schema}.crontick_schedules
        where next_at <= now() and name not in (select name from synced)
    ) d), '[]'::json) as due,
    -- When the schedules not due here are next due (crontick.tick.schedules_duty: with a waker, booked when no
    -- plan is applied). Rows synced or made dormant here are left out: the snapshot has them as they were.
    (select pg_catalog.min(s.next_at) from {schema}.crontick_schedules s
     where s.next_at > now() and pg_catalog.isfinite(s.next_at)
        and s.name not in (select name from synced) and s.name not in (select name from dormant)) as next_at;

-- name: schedule_apply
-- Tick, second schedule statement (only when some schedule was due): every schedule's decided
-- slots in one statement. %(plans)s is a JSON array of [name, cron, time_zone, cursor_was,
-- cursor_to, next_at, job_type, payload, [enqueued slots, newest first], [[reason, first, last,
-- count, count_is_lower_bound]...], paused, max_attempts (the handler's max_attempts=; null: the default)].
-- At most once: a schedule advances only from the cursor its plan was computed from (so of
-- racing ticks one wins and the others write nothing), only forward, and never past the
-- database's now(), so a tick whose clock is ahead cannot run a slot early. The slot rows'
-- primary key is the second guard: a job is inserted only for a slot row this statement
-- inserted (the conditional insert graphile-worker uses). Each slot row's job id is drawn
-- first, so slot and job name each other. A plan's jobs are due from its newest slot, not
-- now(): the tick's claim compares run_after with the tick's own start time, which is before
-- this statement, and the slot due now must be claimed by this same tick. Sharing one
-- run_after, they are claimed in id order: newest first.
with plan as materialized (
    select p ->> 0 as name, p ->> 1 as cron, p ->> 2 as time_zone, (p ->> 3)::timestamptz as cursor_was,
        (p ->> 4)::timestamptz as cursor_to, (p ->> 5)::timestamptz as next_at, p ->> 6 as job_type,
        p -> 7 as payload, p -> 8 as enqueue, p -> 9 as skipped, coalesce((p ->> 10)::boolean, false) as paused,
        (p ->> 11)::int as max_attempts
    from pg_catalog.jsonb_array_elements(%(plans)s::jsonb) p
), locked as materialized (
    -- Rows are locked in name order, so two ticks evaluating several schedules cannot deadlock.
    select name from {schema}.crontick_schedules where name in (select name from plan) order by name for update
), advanced as (
    update {schema}.crontick_schedules s set
        evaluated_until = p.cursor_to,
        next_at = coalesce(p.next_at, 'infinity'),
        last_slot = coalesce((p.enqueue ->> 0)::timestamptz, s.last_slot),
        updated_at = now()
    from plan p
    where s.name = p.name and s.name in (select name from locked) and s.evaluated_until = p.cursor_was and s.cron = p.cron and s.time_zone = p.time_zone
        and p.cursor_to >= s.evaluated_until and p.cursor_to <= now() and s.next_at <> 'infinity'
        -- Issue 23: a plan made before a pause (or a resume) committed is not applied; the next tick decides again.
        and p.paused = exists (select 1 from {schema}.crontick_pauses x where x.kind = 'schedule' and x.name = s.name)
    returning s.name
), slot as (
    insert into {schema}.crontick_schedule_slots (schedule, slot, outcome, job_id, last_slot)
    select e.name, e.slot, 'enqueued', pg_catalog.nextval(pg_catalog.pg_get_serial_sequence(pg_catalog.quote_ident({schema_name}) || '.jobs', 'id')), e.slot
    from (
        select p.name, x.slot::timestamptz as slot, x.n
        from plan p
        join advanced a on a.name = p.name
        cross join lateral pg_catalog.jsonb_array_elements_text(p.enqueue) with ordinality x(slot, n)
        where x.slot::timestamptz <= now()
        order by p.name, x.n
    ) e
    on conflict (schedule, slot) do nothing
    returning schedule, slot, job_id
), job as (
    -- Each recorded slot's job, with the id the slot row holds (crontick_job_insert_many, sql/functions/job_insert_many.sql).
    select i.id
    from (
        select pg_catalog.array_agg(s.job_id) as ids, pg_catalog.array_agg(p.job_type) as types,
            pg_catalog.array_agg(p.payload) as payloads, pg_catalog.array_agg((p.enqueue ->> 0)::timestamptz) as run_after,
            pg_catalog.array_agg(s.slot) as scheduled_for, pg_catalog.array_agg(s.schedule) as schedules,
            pg_catalog.array_agg(p.max_attempts) as max_attempts
        from slot s join plan p on p.name = s.schedule
    ) a
    cross join lateral {schema}.crontick_job_insert_many(a.types, a.payloads, _ids => a.ids, _run_after => a.run_after,
        _max_attempts => a.max_attempts, _scheduled_for => a.scheduled_for, _schedules => a.schedules) i(id)
), skip as (
    insert into {schema}.crontick_schedule_slots (schedule, slot, outcome, last_slot, slot_count, count_is_lower_bound)
    select p.name, (k ->> 1)::timestamptz, k ->> 0, (k ->> 2)::timestamptz, (k ->> 3)::int, (k ->> 4)::boolean
    from plan p
    join advanced a on a.name = p.name
    cross join lateral pg_catalog.jsonb_array_elements(p.skipped) k
    on conflict (schedule, slot) do nothing
    returning slot_count
)
select (select count(*) from job) as enqueued,
    (select coalesce(pg_catalog.sum(slot_count), 0) from skip) as skipped,
    (select count(*) from advanced) as advanced,
    -- When a schedule is next due after this statement (crontick.tick.schedules_duty: with a waker, booked): the
    -- applied plans' next slots and the others' stored ones, finite, as the probe reads schedules_next_at.
    (select pg_catalog.min(n.next_at) from (
        select p.next_at from plan p join advanced a on a.name = p.name
        union all
        select s.next_at from {schema}.crontick_schedules s
        where s.next_at > now() and s.name not in (select name from advanced)
     ) n where pg_catalog.isfinite(n.next_at)) as next_at;

-- name: schedule_list
-- crontick schedules: each stored schedule's cursor, next and last slot, its latest manual run
-- ("enqueue now", issue 23).
-- next_at is null unless finite ('-infinity': not computed yet; 'infinity': no longer declared).
select name, cron, time_zone, catch_up, job_type, evaluated_until,
    case when pg_catalog.isfinite(next_at) then next_at end as next_at, last_slot,
    previous_cron, previous_time_zone, changed_at, manual_job_id, manual_at
from {schema}.crontick_schedules
order by name;

-- name: schedule_pauses
-- crontick schedules and the admin's schedules page: the paused schedules, also those no tick
-- has stored yet.
select name, paused_at from {schema}.crontick_pauses where kind = 'schedule' order by name;

-- name: schedule_recent_slots
-- crontick schedules: the latest decisions per schedule (enqueued or skipped, with the reason),
-- read backwards along the primary key, never a scan of the whole slot table.
select s.name, r.slot, r.outcome, r.job_id, r.last_slot, r.slot_count, r.count_is_lower_bound
from {schema}.crontick_schedules s
cross join lateral (
    select slot, outcome, job_id, last_slot, slot_count, count_is_lower_bound
    from {schema}.crontick_schedule_slots
    where schedule = s.name
    order by slot desc
    limit %(per_schedule)s
) r
order by s.name, r.slot desc;
