-- signal: crontick's SQL API for waking a workflow that waits in job.wait_for (CONTRACT.md "Durable
-- steps"), for any driver or language on the same database, inside the caller's own transaction: a
-- rolled-back transaction wakes nothing. crontick.signal() in Python calls it too (sql/workflows.sql
-- job_signal), so both share one implementation:
--   select crontick.signal('survey:+15550100', '{"answer": "YES"}');
-- The oldest job waiting on `event_key` (by when its wait began) gets `payload`: it is pending
-- again, due now, and its job.wait_for returns the payload. With no job waiting, the signal is kept
-- (crontick_signals) and delivered to the next wait that begins on the key (kept 7 days:
-- crontick.workflows.steps.SIGNAL_KEEP_DAYS; retention deletes older). Returns the woken job's id, or
-- null when the signal was kept. In its own schema it is crontick.signal; under
-- CRONTICK_SCHEMA=public it is public.crontick_signal.
-- A transaction-scoped advisory lock per key orders a signal against a wait beginning on the same
-- key (crontick_job_begin_waits takes it too): either the wait sees the kept signal, or the signal
-- sees the waiting job, never neither. It is held until the caller commits, so signal in short
-- transactions. A SQL signal is run by the next tick; crontick.signal in Python also kicks one.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.{api_signal}(
    event_key text,
    payload jsonb default null
) returns bigint
language plpgsql
security definer  -- runs as crontick's role: EXECUTE alone lets another role call it (docs/security.md)
as $$
declare
    _job bigint;
    _name text;
begin
    if {api_signal}.event_key is null or {api_signal}.event_key = '' then
        raise exception 'crontick.signal: expected a non-empty event key, got %', coalesce(quote_literal({api_signal}.event_key), 'null')
            using errcode = '22023';
    end if;
    -- The key is indexed (job_steps_waiting, crontick_signals_key): at most 2,048 bytes, which always fit
    -- (crontick.text.KEY_MAX_BYTES says why). Refused here; Python's crontick.signal and job.wait_for replace a
    -- longer key by its stable digest (crontick.text.fit_key) before it gets here.
    if octet_length({api_signal}.event_key) > {key_max_bytes} then
        raise exception 'crontick.signal: expected an event key of at most % bytes (UTF-8), got %',
            to_char({key_max_bytes}, 'FM999,999'), octet_length({api_signal}.event_key) using errcode = '22001';
    end if;
    perform pg_advisory_xact_lock(hashtextextended('crontick.signal:' || {api_signal}.event_key, 0));
    select s.job_id, s.name into _job, _name
    from {schema}.job_steps s
    join {schema}.jobs j on j.id = s.job_id
    where s.event_key = {api_signal}.event_key and s.status = 'waiting' and j.status = 'waiting'
    order by s.created_at, s.job_id
    limit 1
    for update of j;
    if _job is null then
        insert into {schema}.crontick_signals (event_key, payload) values ({api_signal}.event_key, {api_signal}.payload);
        return null;
    end if;
    update {schema}.job_steps s set status = 'signalled', result = {api_signal}.payload, finished_at = now()
    where s.job_id = _job and s.name = _name;
    update {schema}.jobs j set status = 'pending', run_after = now(), updated_at = now()
    where j.id = _job;
    return _job;
end;
$$;
