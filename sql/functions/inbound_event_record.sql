-- crontick_inbound_event_record: POST /api/hooks/{name} for a hook with flow control (a debounce or a
-- group_key, crontick.inbound(..., debounce=..., group_key=...)): record a verified provider event
-- and enqueue its job through crontick.enqueue, in one call (so one transaction). Called by
-- sql/inbound.sql inbound_event_flow_record (crontick.hooks.endpoint.record); hooks without flow
-- control keep the plain statement inbound_event_record, which draws the job's id first. Here the
-- job's id is only known after the enqueue (a debounced event merges into the sender's open job),
-- so the event row is written first with job_id 0, which no one else sees (a concurrent twin waits
-- on the event's unique index until this commits), and then given the id. A duplicate event (the
-- same (hook, event_id), or (hook, body_sha256) when given) enqueues and merges nothing: the
-- original event's job id comes back with new = false. Each statement here reads a fresh snapshot,
-- so the twin's row is found once its transaction has committed. `_priority` is the job's: the
-- handler's `priority=`, which only Python knows (null: 0, as crontick.enqueue has it).
create or replace function {schema}.crontick_inbound_event_record(
    _hook text,
    _event_id text,
    _body_sha256 bytea,
    _received_at timestamptz,
    _type text,
    _payload jsonb,
    _group_key text,
    _debounce_key text,
    _debounce_seconds double precision,
    _debounce_max_seconds double precision,
    _priority integer
) returns table (job_id bigint, new boolean)
language plpgsql
as $$
#variable_conflict use_column
declare
    _recorded boolean;
    _id bigint;
begin
    insert into {schema}.crontick_inbound_events (hook, event_id, body_sha256, job_id, received_at)
    values (_hook, _event_id, _body_sha256, 0, _received_at)
    on conflict do nothing
    returning true into _recorded;
    if _recorded is null then
        return query
        select e.job_id, false from {schema}.crontick_inbound_events e
        where e.hook = _hook and (e.event_id = _event_id or e.body_sha256 = _body_sha256)
        order by e.received_at
        limit 1;
        return;
    end if;
    _id := {schema}.{api_enqueue}(type => _type, payload => _payload, group_key => _group_key,
        priority => _priority, debounce_key => _debounce_key, debounce_seconds => _debounce_seconds,
        debounce_max_seconds => _debounce_max_seconds);
    update {schema}.crontick_inbound_events e set job_id = _id where e.hook = _hook and e.event_id = _event_id;
    return query select _id, true;
end;
$$;

-- The 10-argument signature, without `_priority`, stays for rolling deploys: while the new schema is
-- in place, processes of the previous release still call it (its jobs get priority 0, as they did).
-- A thin wrapper, so one body does the work; it can go (with a migration that drops it, see
-- crontick.db.migrate) once no release that calls it is still served. The new argument has no
-- default: a 10-argument call would then match both signatures.
create or replace function {schema}.crontick_inbound_event_record(
    _hook text,
    _event_id text,
    _body_sha256 bytea,
    _received_at timestamptz,
    _type text,
    _payload jsonb,
    _group_key text,
    _debounce_key text,
    _debounce_seconds double precision,
    _debounce_max_seconds double precision
) returns table (job_id bigint, new boolean)
language sql
as $$
    select r.job_id, r.new from {schema}.crontick_inbound_event_record(_hook, _event_id, _body_sha256, _received_at,
        _type, _payload, _group_key, _debounce_key, _debounce_seconds, _debounce_max_seconds, null) r;
$$;
