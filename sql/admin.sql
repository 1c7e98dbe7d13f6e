-- Named queries of the admin (pages, JSON API and the CLI's jobs/retry/cancel/stats), loaded
-- once by crontick.db and run by the stores of crontick.admin (jobs, reminders, overview). Reads run inside admin_read_begin's
-- read-only transaction with a short statement_timeout. Lists are keyset (id below a cursor,
-- newest first), never OFFSET; they select the first 200 characters of an error and never a
-- payload. Each filter combination has its own fixed text, so each is planned for the index
-- that serves it (no `col = $1 or $1 is null` in an indexed position).

-- name: admin_read_begin
-- store.read: the first statement of every admin read transaction. 2 s: a page is a few
-- short reads; a slower one shows "unavailable" for its panel instead of holding a connection.
-- No JIT: each read is a bounded index read, and compiling one (past jit_above_cost, which the
-- per-type merges' estimates reach on a million rows) took longer than running it.
set transaction read only;
set local jit = off;
set local statement_timeout = '2s'

-- name: admin_action_begin
-- store.action: the first statement of every admin action transaction (writes; 5 s).
set local statement_timeout = '5s'

-- name: admin_jobs
-- store.list_jobs, no filter: the primary key, backwards from the cursor.
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at, group_key, priority
from {schema}.jobs
where id < %(before_id)s
order by id desc
limit %(limit)s;

-- name: admin_jobs_by_status
-- store.list_jobs with a status: the newest ids below the cursor of each job type
-- (crontick_job_types, crontick_job_ids_below), merged by id; running jobs, which no per-type
-- index holds, from jobs_running_lease. The page's rows are then read by primary key. No
-- (status, id) index: migration 0023 says why.
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at, group_key, priority
from {schema}.jobs
where id = any(array(
    select p.id from (
        select q.id from {schema}.crontick_job_types() t(type)
        cross join lateral {schema}.crontick_job_ids_below(t.type, %(status)s, %(before_id)s, %(limit)s) q(id)
        where %(status)s <> 'running'
        union all
        select r.id from {schema}.jobs r
        where %(status)s = 'running' and r.status = 'running' and r.id < %(before_id)s
    ) p
    order by p.id desc
    limit %(limit)s))
order by id desc;

-- name: admin_jobs_by_type
-- store.list_jobs with a type: the newest ids below the cursor of each status
-- (crontick_job_ids_below, from the index alone), merged by id; the page's rows are then read by
-- primary key. The statuses come from crontick.jobs.queue.STATUSES. Ids first, so that no plan walks
-- the primary key backwards filtering on type and status instead (one chose that on a million rows: 0.6 s).
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at, group_key, priority
from {schema}.jobs
where id = any(array(
    select p.id from pg_catalog.unnest(%(statuses)s::text[]) as s(status)
    cross join lateral {schema}.crontick_job_ids_below(%(type)s, s.status, %(before_id)s, %(limit)s) p(id)
    order by p.id desc
    limit %(limit)s))
order by id desc;

-- name: admin_jobs_by_type_status
-- store.list_jobs with a type and a status: crontick_job_ids_below, then the rows by primary key.
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at, group_key, priority
from {schema}.jobs
where id = any(array(
    select p.id from {schema}.crontick_job_ids_below(%(type)s, %(status)s, %(before_id)s, %(limit)s) p(id)))
order by id desc;

-- name: admin_jobs_search
-- store.list_jobs with a payload filter: containment over a bounded window of ids, [floor_id,
-- before_id), by primary key. There is no GIN index on payload (it would slow the tick's every
-- write); the window bounds the work, and the cursor continues below it. The window is always
-- the plan's driver, so the optional status and type are plain filters here.
select id, type, status, attempts, max_attempts, run_after, pg_catalog.left(last_error, 200) as last_error, key,
    created_at, updated_at, finished_at, group_key, priority
from {schema}.jobs
where id < %(before_id)s and id >= %(floor_id)s and payload @> %(payload)s::jsonb
  and (%(status)s::text is null or status = %(status)s::text)
  and (%(type)s::text is null or type = %(type)s::text)
order by id desc
limit %(limit)s;

-- name: admin_jobs_next_id
-- store.list_jobs, first page of a payload search: where the window starts.
select coalesce(pg_catalog.max(id), 0) + 1 from {schema}.jobs;

-- name: admin_job_get
-- store.get_job: one job, whole (payload, a debounced job's merged payloads, error); with the schedule and slot it was enqueued
-- for (a manual "enqueue now" has a schedule and no slot) and its snoozes (issue 23); its start_by (a job not started by
-- then never starts) and, for a running job crontick.cancel asked to stop, when it was asked (issue 36).
select id, type, payload, payloads, status, attempts, max_attempts, run_after, last_error, key,
    created_at, updated_at, finished_at, locked_until, schedule, scheduled_for, snoozes, group_key, priority, held,
    start_by, cancel_requested_at
from {schema}.jobs
where id = %(id)s;

-- name: admin_job_attempts
-- store.get_job: its attempts, oldest first (bounded: a job retried by hand forever stays readable).
-- The attempt that finished a done job well has no job_attempts row (migration 0010): it is the
-- job's own row, last; jobs done before 0010 have a 'succeeded' row for it instead.
select attempt, started_at, finished_at, outcome, error, traceback
from (
    select attempt, id, started_at, finished_at, outcome, error, traceback
    from {schema}.job_attempts
    where job_id = %(id)s
    union all
    select j.attempts, null, j.started_at, j.finished_at, 'succeeded', null, null
    from {schema}.jobs j
    where j.id = %(id)s and j.status = 'done' and j.started_at is not null
      and not exists (select 1 from {schema}.job_attempts a
                      where a.job_id = j.id and a.attempt = j.attempts and a.outcome = 'succeeded')
) history
order by attempt, id nulls last
limit 1000;

-- name: admin_stats_counts
-- store.stats: jobs per status, each count stopping at the cap (a range of an index that holds
-- that status, never a full count): ended jobs in jobs_status_updated (migration 0024), running
-- ones in jobs_running_lease, waiting ones in jobs_waiting_until, pending ones in jobs_pending_due
-- (those that may start) and jobs_group_active (a group's, held or not; ungrouped held jobs do not
-- exist; the first arm skips the groups' startable heads, at most one per group). Each status is a
-- constant, so the planner can prove each partial index's predicate; the arms follow
-- crontick.jobs.queue.STATUSES (tests/admin/test_overview_store.py holds them to it).
select 'pending' as status, least(%(cap)s,
        (select count(*) from (select 1 from {schema}.jobs j
                               where j.status = 'pending' and not j.held and j.group_key is null limit %(cap)s) c)
        + (select count(*) from (select 1 from {schema}.jobs j
                                 where j.group_key is not null and j.status = 'pending' limit %(cap)s) c)) as n
union all
select 'running', (select count(*) from (select 1 from {schema}.jobs j where j.status = 'running' limit %(cap)s) c)
union all
select 'done', (select count(*) from (select 1 from {schema}.jobs j where j.status = 'done' limit %(cap)s) c)
union all
select 'failed', (select count(*) from (select 1 from {schema}.jobs j where j.status = 'failed' limit %(cap)s) c)
union all
select 'cancelled', (select count(*) from (select 1 from {schema}.jobs j where j.status = 'cancelled' limit %(cap)s) c)
union all
select 'waiting', (select count(*) from (select 1 from {schema}.jobs j where j.status = 'waiting' limit %(cap)s) c);

-- name: admin_stats_health
-- store.stats: the oldest due job's wait (the first entry of jobs_pending_due) and the last tick.
select extract(epoch from now() - (select pg_catalog.min(run_after) from {schema}.jobs where status = 'pending' and not held and run_after <= now()))::float8
        as oldest_due_seconds,
    (select pg_catalog.max(finished_at) from {schema}.crontick_ticks) as last_tick_at,
    now() as as_of;

-- name: admin_stats_hourly
-- store.stats: done and failed jobs per hour over the last 24 h, summed from the ticks' own
-- summaries (crontick_ticks_finished), not by scanning jobs.
select pg_catalog.date_trunc('hour', finished_at) as hour,
    pg_catalog.sum(coalesce((summary -> 'jobs'::text ->> 'succeeded'::text)::bigint, 0))::bigint as done,
    pg_catalog.sum(coalesce((summary -> 'jobs'::text ->> 'failed'::text)::bigint, 0))::bigint as failed,
    count(*) as ticks
from {schema}.crontick_ticks
where finished_at > now() - interval '24 hours'
group by 1
order by 1;

-- name: admin_reminders
-- store.list_reminders: the send log, newest first, each with its booking from the reminder source
-- ({reminder_source}, only read; looked up by its id as text: migration 0016's index on crontick's
-- own bookings, and docs/reminders.md's on a source of your own).
select r.id, r.booking_id, r.kind, r.channel, r.status, r.attempts, r.max_attempts, r.sent_at, r.next_attempt_at,
    pg_catalog.left(r.last_error, 200) as last_error, r.created_at, r.updated_at, b.customer_name, b.starts_at, b.time_zone
from {schema}.reminder_sends r
left join {reminder_source} b on b.id::text = r.booking_id
where r.id < %(before_id)s
order by r.id desc
limit %(limit)s;

-- name: admin_reminders_by_status
-- store.list_reminders with a status: reminder_sends_status_id.
select r.id, r.booking_id, r.kind, r.channel, r.status, r.attempts, r.max_attempts, r.sent_at, r.next_attempt_at,
    pg_catalog.left(r.last_error, 200) as last_error, r.created_at, r.updated_at, b.customer_name, b.starts_at, b.time_zone
from {schema}.reminder_sends r
left join {reminder_source} b on b.id::text = r.booking_id
where r.status = %(status)s and r.id < %(before_id)s
order by r.id desc
limit %(limit)s;

-- name: admin_reminders_due
-- store.due_reminders: confirmed bookings starting in the next 24 h, with their sends so far
-- (from the reminder source, by its starts_at index: bookings_confirmed_starts on crontick's own).
select b.id::text as booking_id, b.customer_name, b.email, b.phone, b.starts_at, b.time_zone,
    coalesce((select pg_catalog.json_agg(pg_catalog.json_build_object('kind', r.kind, 'status', r.status, 'channel', r.channel,
                                                'sent_at', r.sent_at) order by r.kind)
              from {schema}.reminder_sends r where r.booking_id = b.id::text), '[]'::json) as sends
from {reminder_source} b
where b.status = 'confirmed' and b.starts_at >= now() and b.starts_at < now() + interval '24 hours'
order by b.starts_at, 1
limit %(limit)s;

-- name: admin_ticks
-- store.list_ticks: recent ticks, newest first; one row more than shown gives the last gap.
select id, started_at, finished_at, source, summary
from {schema}.crontick_ticks
where id < %(before_id)s
order by id desc
limit %(limit)s;

-- name: admin_job_lock
-- store.retry_job / cancel_job / delete_job: lock the job and learn who else holds its key, or its
-- debounce key if it never started (a retry would reopen its window: jobs_debounce_open).
select j.status,
    (select o.id from {schema}.jobs o
     where j.key is not null and o.key = j.key and o.status in ('pending', 'running', 'waiting') and o.id <> j.id
     limit 1) as key_holder,
    (select o.id from {schema}.jobs o
     where j.debounce_key is not null and j.started_at is null and o.type = j.type and o.debounce_key = j.debounce_key
       and o.status = 'pending' and o.started_at is null and o.id <> j.id
     limit 1) as debounce_holder
from {schema}.jobs j
where j.id = %(id)s
for update of j;

-- name: admin_job_retry
-- store.retry_job and `crontick retry`: run a finished job again, keeping its attempts and
-- history; it gets at least one more attempt. A done job's succeeded attempt, kept in its own
-- row (migration 0010), is copied into job_attempts first (admin_job_attempts shows it either way).
with kept as (
    insert into {schema}.job_attempts (job_id, attempt, started_at, finished_at, outcome, error)
    select j.id, j.attempts, j.started_at, j.finished_at, 'succeeded', null
    from {schema}.jobs j
    where j.id = %(id)s and j.status = 'done' and j.started_at is not null
      and not exists (select 1 from {schema}.job_attempts a
                      where a.job_id = j.id and a.attempt = j.attempts and a.outcome = 'succeeded')
)
update {schema}.jobs set
    status = 'pending', max_attempts = greatest(max_attempts, attempts + 1), run_after = now(),
    locked_until = null, finished_at = null, updated_at = now()
where id = %(id)s and status in ('done', 'failed', 'cancelled')
returning id, type, payload, status, attempts, max_attempts, run_after, last_error, key,
    created_at, updated_at, finished_at, locked_until;

-- name: admin_job_cancel
-- store.cancel_job and `crontick cancel`: crontick.cancel (sql/functions/cancel.sql, the one definition of a cancel),
-- in the action's transaction. A pending (or sleeping) job will not run; nor a waiting one (job.wait_for, job.join:
-- a later signal on its key then wakes another waiter or is kept); a running one is asked to stop (its
-- cancel_requested_at), and ends cancelled at its next step. Its unended children (job.spawn) are cancelled with it.
select {schema}.{api_cancel}(%(id)s::bigint) as cancelled;

-- name: admin_job_cancelled
-- store.cancel_job, after admin_job_cancel in the same transaction: the job as the cancel left it (a statement of
-- its own: admin_job_cancel's snapshot predates the function's update).
select id, type, payload, status, attempts, max_attempts, run_after, last_error, key,
    created_at, updated_at, finished_at, locked_until, start_by, cancel_requested_at
from {schema}.jobs
where id = %(id)s;

-- name: admin_job_delete
-- store.delete_job: a finished job and (by cascade) its attempts.
delete from {schema}.jobs where id = %(id)s and status in ('done', 'failed', 'cancelled') returning id;

-- name: admin_jobs_bulk_retry
-- store.bulk_retry: the next chunk of a filter frozen at confirmation (status, optional
-- payload, ids up to max_id; the retryable statuses are ended ones), ascending from after_id: one
-- range of jobs_type_status_id per job type (crontick_job_types), merged by id, then locked. A job
-- that left the status meanwhile is not locked, but counts as looked at (`picked`), so the next
-- chunk starts past it. Of the jobs sharing a key only the first is retried, and none whose key
-- another active job holds: those are skipped and counted, never a unique-violation error. The
-- same for a debounce key of a job that never started. With a type, only that type's range is read
-- (as admin_jobs_bulk_run_now).
with picked as materialized (
    select p.id from {schema}.crontick_job_types() t(type)
    cross join lateral (
        select j.id from {schema}.jobs j
        where j.type = t.type and j.status = %(status)s and j.id > %(after_id)s and j.id <= %(max_id)s
          and j.status <> 'running' and (j.status <> 'pending' or j.held)  -- jobs_type_status_id's predicate
          and (%(payload)s::jsonb is null or j.payload @> %(payload)s::jsonb)
        order by j.id
        limit %(chunk)s
    ) p
    where %(type)s::text is null or t.type = %(type)s::text
    order by p.id
    limit %(chunk)s
), chosen as materialized (
    select id, key, type, case when started_at is null then debounce_key end as debounce_key from {schema}.jobs
    where id = any(array(select id from picked)) and status = %(status)s
    order by id
    for update
), free as (
    -- A debounced job that never started (a cancelled one) reopens its debounce window when
    -- retried (jobs_debounce_open): the same rule as for a key, per type.
    select c.id from chosen c
    where (c.key is null
       or (c.id = (select pg_catalog.min(c2.id) from chosen c2 where c2.key = c.key)
           and not exists (select 1 from {schema}.jobs o where o.key = c.key and o.status in ('pending', 'running', 'waiting'))))
      and (c.debounce_key is null
       or (c.id = (select pg_catalog.min(c2.id) from chosen c2 where c2.type = c.type and c2.debounce_key = c.debounce_key)
           and not exists (select 1 from {schema}.jobs o where o.type = c.type and o.debounce_key = c.debounce_key
                           and o.status = 'pending' and o.started_at is null)))
), kept as (
    -- As admin_job_retry: a done job's succeeded attempt, kept in its row, goes into job_attempts.
    insert into {schema}.job_attempts (job_id, attempt, started_at, finished_at, outcome, error)
    select j.id, j.attempts, j.started_at, j.finished_at, 'succeeded', null
    from {schema}.jobs j
    where j.id = any(array(select id from free)) and j.status = 'done' and j.started_at is not null
      and not exists (select 1 from {schema}.job_attempts a
                      where a.job_id = j.id and a.attempt = j.attempts and a.outcome = 'succeeded')
), retried as (
    update {schema}.jobs j set
        status = 'pending', max_attempts = greatest(j.max_attempts, j.attempts + 1), run_after = now(),
        locked_until = null, finished_at = null, updated_at = now()
    where j.id = any(array(select id from free))
    returning j.id
)
select (select count(*) from retried) as retried, (select count(*) from chosen) as chosen,
    (select count(*) from picked) as picked, (select pg_catalog.max(id) from picked) as last_id;

-- name: admin_reminder_retry
-- store.retry_reminder: a failed or unknown reminder (a person has checked the provider) is
-- due again now with one more attempt; the next tick's claim sends it if its booking is still
-- confirmed and ahead.
update {schema}.reminder_sends set
    status = 'failed', next_attempt_at = now(), max_attempts = greatest(max_attempts, attempts + 1),
    maybe_delivered = false, locked_until = null, updated_at = now()
where booking_id = %(booking_id)s and kind = %(kind)s and status in ('failed', 'unknown')
returning id, booking_id, kind, channel, status, attempts, max_attempts, sent_at, next_attempt_at, last_error,
    created_at, updated_at;

-- name: admin_reminder_status
-- store.retry_reminder: why a reminder could not be retried.
select status from {schema}.reminder_sends where booking_id = %(booking_id)s and kind = %(kind)s;

-- name: admin_audit_insert
-- store.audit: one row per admin action, in the action's own transaction, with who acted.
insert into {schema}.admin_audit (role, actor, action, detail, rows)
values (%(role)s, %(actor)s, %(action)s, %(detail)s, %(rows)s);

-- name: admin_inbound_events
-- hooks_alerts_store.list_events: recorded inbound events, newest first, keyset on (received_at,
-- hook, event_id) below the cursor, walking crontick_inbound_events_received backwards. The
-- first page passes 'infinity' as its cursor; the plain `received_at <=` lets the index serve
-- the range (a row comparison alone does not match a one-column index). Never the event's
-- payload: that is in its job.
select hook, event_id, job_id, received_at
from {schema}.crontick_inbound_events
where received_at <= %(before_at)s::timestamptz
  and (received_at, hook, event_id) < (%(before_at)s::timestamptz, %(before_hook)s::text, %(before_event)s::text)
order by received_at desc, hook desc, event_id desc
limit %(limit)s;

-- name: admin_inbound_events_by_hook
-- hooks_alerts_store.list_events with ?hook=: as admin_inbound_events, one hook's events.
select hook, event_id, job_id, received_at
from {schema}.crontick_inbound_events
where hook = %(hook)s and received_at <= %(before_at)s::timestamptz
  and (received_at, hook, event_id) < (%(before_at)s::timestamptz, %(before_hook)s::text, %(before_event)s::text)
order by received_at desc, hook desc, event_id desc
limit %(limit)s;

-- name: admin_alerts
-- hooks_alerts_store.list_alerts: the alert outbox, newest first, by primary key below the
-- cursor. The first 200 characters of the error and never the body (the POST's fields).
select id, event, subject, status, attempts, occurred_at, next_attempt_at, sent_at,
    pg_catalog.left(last_error, 200) as last_error, created_at, updated_at
from {schema}.crontick_alerts
where id < %(before_id)s
order by id desc
limit %(limit)s;

-- name: admin_alerts_by_status
-- hooks_alerts_store.list_alerts with ?status=: as admin_alerts, one status. Retention keeps
-- the outbox to about a month of rows, so the primary key walk with a filter stays short.
select id, event, subject, status, attempts, occurred_at, next_attempt_at, sent_at,
    pg_catalog.left(last_error, 200) as last_error, created_at, updated_at
from {schema}.crontick_alerts
where status = %(status)s and id < %(before_id)s
order by id desc
limit %(limit)s;

-- name: admin_session_signed_out
-- signouts.signed_out, on every admin request whose cookie is validly signed (never for one
-- that is not): was this session signed out? The primary key, one row or none.
select 1 as signed_out
from {schema}.crontick_admin_signouts
where session = %(session)s;

-- name: admin_session_sign_out
-- signouts.sign_out, at sign-out: record the session until its cookie expires. Records an hour
-- past their cookie's expiry go in the same statement (the hour covers app hosts whose clocks
-- run behind the database's; an expired cookie is refused by its own signature anyway).
with expired as (
    delete from {schema}.crontick_admin_signouts where expires_at < now() - interval '1 hour'
)
insert into {schema}.crontick_admin_signouts (session, expires_at)
values (%(session)s, %(expires_at)s)
on conflict (session) do nothing;
