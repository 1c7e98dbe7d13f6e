-- Named queries of crontick.inbound. Parameters are named; nothing is built with string formatting.

-- name: inbound_event_record
-- POST /api/hooks/{name}: record a verified provider event and enqueue its job, in one statement
-- (so one transaction: neither is ever written without the other). The job's id is drawn first
-- so the event row can carry it; when the event is already there, the insert does nothing, no
-- job is added (the drawn id is simply skipped), and the original job's id comes back with
-- new = false. Already there: the same (hook, event_id), or, for senders that sign the body and
-- no id (GitHub), the same (hook, body_sha256), so a replay under a new delivery id is a
-- duplicate too. ON CONFLICT without a target takes both unique indexes as arbiters. A
-- concurrent twin waits on the index and then does nothing; the read of its job id may then miss
-- the row it waited for (this statement's snapshot predates it), so the caller runs the
-- statement again when no row comes back. `priority` is the handler's `priority=` (else 0), as
-- crontick.enqueue gives it. `traceparent`: the sender's trace context, while the app traces
-- (crontick.tracing.inbound), else null. `start_by_seconds`: the hook's deadline for its job to start, from
-- now (crontick.inbound(..., start_by_seconds=...)), else null.
with drawn as materialized (
    select pg_catalog.nextval(pg_catalog.pg_get_serial_sequence(pg_catalog.quote_ident({schema_name}) || '.jobs', 'id')) as job_id
), event as (
    insert into {schema}.crontick_inbound_events (hook, event_id, body_sha256, job_id, received_at)
    select %(hook)s, %(event_id)s, %(body_sha256)s, drawn.job_id, %(received_at)s from drawn
    on conflict do nothing
    returning job_id
), job as (
    -- crontick_job_insert_many (sql/functions/job_insert_many.sql): the job, with the drawn id, only when the event is new.
    select i.id from event
    cross join lateral {schema}.crontick_job_insert_many(array[%(type)s::text], array[%(payload)s::jsonb],
        _ids => array[event.job_id], _priorities => array[%(priority)s::int],
        _max_attempts => array[%(max_attempts)s::int],
        _traceparents => case when %(traceparent)s::text is not null then array[%(traceparent)s::text] end,
        _start_by => case when %(start_by_seconds)s::float8 is not null
            then array[pg_catalog.now() + pg_catalog.make_interval(secs => %(start_by_seconds)s::float8)] end) i(id)
)
select id as job_id, true as new from job
union all
(select e.job_id, false from {schema}.crontick_inbound_events e
 where e.hook = %(hook)s and (e.event_id = %(event_id)s or e.body_sha256 = %(body_sha256)s)
   and not exists (select 1 from event)
 order by e.received_at
 limit 1);

-- name: inbound_event_flow_record
-- POST /api/hooks/{name} for a hook with a debounce or a group_key: record the event and enqueue
-- (or merge) its job in one call (sql/functions/inbound_event_record.sql says how). No row: a
-- concurrent twin's event was not readable yet; the caller runs it again. `priority` as above.
select job_id, new from {schema}.crontick_inbound_event_record(%(hook)s, %(event_id)s, %(body_sha256)s,
    %(received_at)s, %(type)s, %(payload)s, %(group_key)s, %(debounce_key)s, %(debounce_seconds)s,
    %(debounce_max_seconds)s, %(priority)s);

-- name: inbound_job_options
-- POST /api/hooks/{name} for a hook with flow control and a max_attempts (the hook's, else its handler's) or a
-- start_by_seconds: inbound_event_flow_record enqueues through crontick.enqueue without them, so the new (or
-- merged) job, not started yet, gets them here, in the same transaction (a null keeps the job's own). A merged
-- job's deadline becomes this event's, the newest, as a debounce's merge gives it.
update {schema}.jobs set max_attempts = coalesce(%(max_attempts)s::int, max_attempts),
    start_by = coalesce(pg_catalog.now() + pg_catalog.make_interval(secs => %(start_by_seconds)s::float8), start_by)
where id = %(id)s and status = 'pending' and started_at is null;

-- name: inbound_event_signal_record
-- POST /api/hooks/{name} for a hook that only signals (crontick.inbound(name, verify=..., signal=...)):
-- record the event, with no job (job_id 0 until the signal says which job it woke), inside the
-- transaction that then signals (crontick.hooks.endpoint.record). No row: the event is already
-- recorded (a redelivery, or a concurrent twin that committed first), so nothing is signalled.
insert into {schema}.crontick_inbound_events (hook, event_id, body_sha256, job_id, received_at)
values (%(hook)s, %(event_id)s, %(body_sha256)s, 0, %(received_at)s)
on conflict do nothing
returning true as new;

-- name: inbound_event_signalled
-- crontick.hooks.endpoint.record, in the same transaction, after a signal-only hook's signal woke a
-- job: the event row names that job (the admin's hooks page links it). A kept signal leaves 0.
update {schema}.crontick_inbound_events set job_id = %(job_id)s where hook = %(hook)s and event_id = %(event_id)s;
