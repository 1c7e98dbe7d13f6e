-- Named queries of the admin's second round (issue 23): due and scheduled lists, run now, the
-- failed jobs' error search, per-type figures, the audit log and the schedules' actions. Loaded
-- once by crontick.db; run by crontick.admin.jobs.store, overview.figures, audit.store and schedules.store.
-- Reads run inside admin_read_begin's read-only transaction (sql/admin.sql), under its 2 s
-- statement_timeout; lists are keyset, never OFFSET, and never select a whole error or payload.

-- name: admin_jobs_due
-- run_now.list_pending (status=due): pending jobs whose run_after has come, newest first: below the
-- cursor, each job type's newest (crontick_job_types, crontick_job_pending_below), merged by id.
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at
from {schema}.jobs
where id = any(array(
    select p.id from {schema}.crontick_job_types() t(type)
    cross join lateral {schema}.crontick_job_pending_below(t.type, true, %(before_id)s, %(limit)s) p(id)
    order by p.id desc
    limit %(limit)s))
order by id desc;

-- name: admin_jobs_scheduled
-- run_now.list_pending (status=scheduled): pending jobs due later (a backoff, a snooze or a
-- future run_after), newest first, merged as admin_jobs_due.
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at
from {schema}.jobs
where id = any(array(
    select p.id from {schema}.crontick_job_types() t(type)
    cross join lateral {schema}.crontick_job_pending_below(t.type, false, %(before_id)s, %(limit)s) p(id)
    order by p.id desc
    limit %(limit)s))
order by id desc;

-- name: admin_jobs_due_by_type
-- run_now.list_pending with a type (status=due): crontick_job_pending_below of the type.
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at
from {schema}.jobs
where id = any(array(
    select p.id from {schema}.crontick_job_pending_below(%(type)s, true, %(before_id)s, %(limit)s) p(id)))
order by id desc;

-- name: admin_jobs_scheduled_by_type
-- run_now.list_pending with a type (status=scheduled).
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at
from {schema}.jobs
where id = any(array(
    select p.id from {schema}.crontick_job_pending_below(%(type)s, false, %(before_id)s, %(limit)s) p(id)))
order by id desc;

-- name: admin_jobs_error_search
-- run_now.search_errors (?error=): failed jobs whose last_error contains the text (case
-- ignored), newest first. Bounded: it reads at most %(window)s failed jobs below the cursor (the
-- newest failed ones: one failed range of jobs_type_status_id per job type, crontick_job_types,
-- merged by id), so a page costs the same at 100,000 failed jobs as at 1,000; the caller continues
-- below the window. No trigram index: pg_trgm is an extension that crontick cannot assume, and an
-- index on every failed error would tax the tick's writes.
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error,
    key, created_at, updated_at, finished_at
from {schema}.jobs
where id = any(array(
    select p.id from {schema}.crontick_job_types() t(type)
    cross join lateral (
        select j.id from {schema}.jobs j
        where j.type = t.type and j.status = 'failed' and j.id < %(before_id)s
          and j.status <> 'running' and (j.status <> 'pending' or j.held)  -- jobs_type_status_id's predicate
        order by j.id desc
        limit %(window)s
    ) p
    order by p.id desc
    limit %(window)s))
  and pg_catalog.strpos(pg_catalog.lower(last_error), pg_catalog.lower(%(text)s)) > 0
  and (%(type)s::text is null or type = %(type)s::text)
order by id desc
limit %(limit)s;

-- name: admin_jobs_error_window_floor
-- run_now.search_errors: where a window of the failed range ends (its lowest id), when the page
-- found fewer matches than it shows and the search goes on below.
select pg_catalog.min(w.id) as lowest, count(*) as scanned
from (
    select p.id from {schema}.crontick_job_types() t(type)
    cross join lateral (
        select j.id from {schema}.jobs j
        where j.type = t.type and j.status = 'failed' and j.id < %(before_id)s
          and j.status <> 'running' and (j.status <> 'pending' or j.held)  -- jobs_type_status_id's predicate
        order by j.id desc
        limit %(window)s
    ) p
    order by p.id desc
    limit %(window)s
) w;

-- name: admin_job_run_now
-- run_now.run_now_job: a pending job is due now; its attempts, history and max_attempts stay.
update {schema}.jobs set run_after = now(), updated_at = now()
where id = %(id)s and status = 'pending'
returning id, type, payload, status, attempts, max_attempts, run_after, last_error, key,
    created_at, updated_at, finished_at, locked_until;

-- name: admin_jobs_bulk_run_now
-- run_now.bulk_run_now: the next chunk of pending jobs due later that a filter frozen at
-- confirmation matches (ids in (after_id, max_id], optional payload), ascending: per job type
-- (crontick_job_types), its held ones (jobs_type_status_id) and its startable ones
-- (jobs_pending_type_id), each arm with its index's predicate word for word and run_after as in
-- crontick_job_pending_below, merged by id, then locked (a job that left meanwhile counts as looked
-- at, `picked`, as in admin_jobs_bulk_retry); each is due now, its attempts untouched. With a
-- type, only that type's ranges are read.
with picked as materialized (
    select p.id from {schema}.crontick_job_types() t(type)
    cross join lateral (
        select x.id from (
            (select j.id from {schema}.jobs j
             where j.type = t.type and j.status = 'pending' and j.held and j.id > %(after_id)s and j.id <= %(max_id)s
               and j.run_after + interval '0 s' > now()
               and j.status <> 'running' and (j.status <> 'pending' or j.held)
               and (%(payload)s::jsonb is null or j.payload @> %(payload)s::jsonb)
             order by j.id limit %(chunk)s)
            union all
            (select j.id from {schema}.jobs j
             where j.type = t.type and j.id > %(after_id)s and j.id <= %(max_id)s
               and j.run_after + interval '0 s' > now()
               and j.status = 'pending' and not j.held
               and (%(payload)s::jsonb is null or j.payload @> %(payload)s::jsonb)
             order by j.id limit %(chunk)s)
        ) x
        order by x.id
        limit %(chunk)s
    ) p
    where %(type)s::text is null or t.type = %(type)s::text
    order by p.id
    limit %(chunk)s
), chosen as materialized (
    select id from {schema}.jobs
    where id = any(array(select id from picked)) and status = 'pending' and run_after > now()
    order by id
    for update
), moved as (
    update {schema}.jobs j set run_after = now(), updated_at = now()
    where j.id = any(array(select id from chosen)) and j.status = 'pending'
    returning j.id
)
select (select count(*) from moved) as moved, (select count(*) from picked) as picked,
    (select pg_catalog.max(id) from picked) as last_id;

-- name: admin_job_ticks
-- run_now.attempt_ticks (the job page): which tick recorded each attempt. The record statement
-- writes an attempt's finished_at (job_attempts, or a done job's own row) and its tick's row
-- (crontick_ticks.finished_at) with the same `_now`, so each finished_at finds its tick on
-- crontick_ticks_finished; a rescued attempt (lease_expired) was ended by a later tick's rescue
-- and finds none. %(finished)s: the history's finished_at values.
select f.at as finished_at, t.id as tick_id, t.source, t.summary ->> 'execution_id'::text as execution_id
from pg_catalog.unnest(%(finished)s::timestamptz[]) as f(at)
cross join lateral (
    select id, source, summary from {schema}.crontick_ticks where finished_at = f.at order by id limit 1
) t;

-- name: admin_type_figures
-- figures.type_figures: the per-type ring (migration 0020) over the last 24 hours, summed per
-- type, duration bucket and whether the minute is within the last hour. Reads the ring only
-- (at most types x 1500 x 4 x buckets rows), never jobs.
select type, bucket, minute > now() - interval '1 hour' as last_hour,
    pg_catalog.sum(done)::bigint as done, pg_catalog.sum(failed)::bigint as failed, pg_catalog.sum(retried)::bigint as retried,
    pg_catalog.sum(slow)::bigint as slow  -- attempts that ran CRONTICK_SLOW_JOB_SECONDS or longer (migration 0044)
from {schema}.crontick_type_minutes
where minute > now() - interval '24 hours'
group by 1, 2, 3;

-- name: admin_type_pending
-- figures.type_figures: each type with pending jobs, and its oldest due job's wait. The types
-- come from crontick_job_types' skip scan (one probe of each of its two indexes per distinct type,
-- at most %(types)s); each type's wait from its first %(probe)s pending jobs by id (the type's held
-- range of jobs_type_status_id and its range of jobs_pending_type_id, each predicate word for
-- word), so it is exact while a type has at most that many pending jobs and otherwise the oldest
-- wait among its oldest-enqueued ones. No scan of jobs, no count.
select t.type, p.oldest_wait_seconds
from {schema}.crontick_job_types(%(types)s) t(type)
cross join lateral (
    select extract(epoch from now() - pg_catalog.min(x.run_after) filter (where x.run_after <= now()))::float8
            as oldest_wait_seconds,
        count(*) as pending
    from (
        select y.id, y.run_after from (
            (select j.id, j.run_after from {schema}.jobs j
             where j.type = t.type and j.status = 'pending' and j.held
               and j.status <> 'running' and (j.status <> 'pending' or j.held)
             order by j.id limit %(probe)s)
            union all
            (select j.id, j.run_after from {schema}.jobs j
             where j.type = t.type and j.status = 'pending' and not j.held
             order by j.id limit %(probe)s)
        ) y
        order by y.id
        limit %(probe)s
    ) x
) p
where p.pending > 0;

-- name: admin_type_pauses
-- figures.type_figures: the paused job types (crontick_pauses rows of kind 'type', written by
-- flow control's pause action).
select name from {schema}.crontick_pauses where kind = 'type' order by name limit %(types)s;

-- name: admin_audit_page
-- audit_log.list_audit: the audit log, newest first, by primary key below the cursor.
select id, at, role, actor, action, detail, rows
from {schema}.admin_audit
where id < %(before_id)s
order by id desc
limit %(limit)s;

-- name: admin_schedule_lock
-- schedule_control.resume: the schedule's stored row, locked (a tick's schedule_apply locks the
-- same row, so a resume and a tick's decision of this schedule take turns), and the database's clock.
select now() as now, cron, time_zone, evaluated_until, next_at
from {schema}.crontick_schedules
where name = %(name)s
for update;

-- name: admin_schedule_paused
-- schedule_control: whether the schedule is paused, and since when.
select paused_at from {schema}.crontick_pauses where kind = 'schedule' and name = %(name)s;

-- name: admin_schedule_pause
-- schedule_control.pause: record the pause (once; pausing a paused schedule changes nothing).
insert into {schema}.crontick_pauses (kind, name, paused_by) values ('schedule', %(name)s, %(role)s)
on conflict (kind, name) do nothing
returning paused_at;

-- name: admin_schedule_resume
-- schedule_control.resume: end the pause and decide, as `paused`, the slots that came due while
-- it stood and no tick saw (%(first)s..%(last)s, %(count)s of them), moving the cursor to now so
-- the catch-up policy never runs them; later slots follow the policy as usual. The cursor moves
-- only from where the plan was computed (as schedule_apply's do).
with gone as (
    delete from {schema}.crontick_pauses where kind = 'schedule' and name = %(name)s returning 1
), advanced as (
    update {schema}.crontick_schedules set evaluated_until = %(cursor_to)s::timestamptz,
        next_at = coalesce(%(next_at)s::timestamptz, 'infinity'), updated_at = now()
    where name = %(name)s and evaluated_until = %(cursor_was)s::timestamptz and %(cursor_to)s::timestamptz is not null
        and next_at <> 'infinity' and exists (select 1 from gone)
    returning name
), skip as (
    insert into {schema}.crontick_schedule_slots (schedule, slot, outcome, last_slot, slot_count, count_is_lower_bound)
    select %(name)s, %(first)s::timestamptz, 'paused', %(last)s::timestamptz, %(count)s, %(lower)s
    from advanced
    where %(first)s::timestamptz is not null
    on conflict (schedule, slot) do nothing
    returning slot_count
)
select (select count(*) from gone) as resumed, (select coalesce(pg_catalog.sum(slot_count), 0) from skip) as skipped;

-- name: admin_schedule_enqueue
-- schedule_control.enqueue_now: one job of the schedule, due now, outside its slots: no slot
-- row (the at-most-once key of real slots is untouched), `schedule` set and `scheduled_for`
-- null, and the schedule's row remembers it as its latest manual run. `max_attempts`: its
-- handler's max_attempts= (null: the default), as a slot's job gets.
with job as (
    select i.id from {schema}.crontick_job_insert_many(array[%(job_type)s::text], array[%(payload)s::jsonb],
        _max_attempts => array[%(max_attempts)s::int], _schedules => array[%(name)s::text]) i(id)
), manual as (
    update {schema}.crontick_schedules set manual_job_id = (select id from job), manual_at = now()
    where name = %(name)s
)
select id from job;
