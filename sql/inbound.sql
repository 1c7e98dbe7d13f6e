-- Named queries of crontick.inbound. Parameters are named; nothing is built with string formatting.

-- name: inbound_event_record
-- POST /api/hooks/{name}: record a verified provider event and enqueue its job, in one statement
-- (so one transaction: neither is ever written without the other). The job's id is drawn first
-- so the event row can carry it; when (hook, event_id) is already there, the insert does nothing,
-- no job is added (the drawn id is simply skipped), and the original job's id comes back with
-- new = false. A concurrent twin waits on the unique index and then does nothing; the read of
-- its job id may then miss the row it waited for (this statement's snapshot predates it), so
-- the caller runs the statement again when no row comes back.
with drawn as materialized (
    select nextval(pg_get_serial_sequence('jobs', 'id')) as job_id
), event as (
    insert into crontick_inbound_events (hook, event_id, job_id, received_at)
    select %(hook)s, %(event_id)s, drawn.job_id, %(received_at)s from drawn
    on conflict (hook, event_id) do nothing
    returning job_id
), job as (
    insert into jobs (id, type, payload)
    select event.job_id, %(type)s, %(payload)s from event
    returning id
)
select id as job_id, true as new from job
union all
select e.job_id, false from crontick_inbound_events e
where e.hook = %(hook)s and e.event_id = %(event_id)s and not exists (select 1 from event);
