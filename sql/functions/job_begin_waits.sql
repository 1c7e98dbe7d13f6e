-- crontick_job_begin_waits: called by crontick_job_record_outcomes, before its one statement, when
-- the batch's outcomes include a wait beginning (job.wait_for, crontick.workflows). It takes the
-- advisory lock of each key waited on (in key order, so two ticks never deadlock on each other;
-- crontick.signal takes the same lock), and delivers a signal kept for the key, oldest first, sent
-- at or after the wait's `since` (park's seventh element: by default the job's creation, so an
-- answer older than the job is not taken for its answer; null or absent: any kept signal),
-- to the wait that begins on it: that outcome becomes pending again, due now, with its wait step
-- signalled with the payload, and the kept signal is consumed. A job no longer running the
-- attempt the tick claimed (fenced) consumes nothing; the row is locked so that it stays this
-- tick's until the statement that records it. Returns the outcomes, changed where a signal was
-- delivered ([id, claimed_attempt, status, attempts, run_after, last_error, snoozed, traceback,
-- park]; park is [name, kind, event_key, step status, result, wait_until, since]: see
-- crontick.workflows.steps.Parked).
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_begin_waits(_now timestamptz, _others json)
returns json
language plpgsql
as $$
declare
    _o jsonb;
    _out jsonb := '[]'::jsonb;
    _payload jsonb;
begin
    perform pg_advisory_xact_lock(hashtextextended('crontick.signal:' || k.key, 0))
    from (select distinct o -> 8 ->> 2 as key from json_array_elements(_others) o
          where o -> 8 ->> 1 = 'wait' order by 1) k;
    for _o in select value::jsonb from json_array_elements(_others) loop
        if _o -> 8 ->> 1 = 'wait' then
            perform 1 from {schema}.jobs j
            where j.id = (_o ->> 0)::bigint and j.status = 'running' and j.attempts = (_o ->> 1)::int
            for update;
            if found then
                delete from {schema}.crontick_signals s where s.id = (
                    select k.id from {schema}.crontick_signals k
                    where k.event_key = _o -> 8 ->> 2 and k.created_at > _now - interval '7 days'
                        and k.created_at >= coalesce((_o -> 8 ->> 6)::timestamptz, '-infinity')
                    order by k.created_at, k.id
                    limit 1
                    for update skip locked)
                returning s.payload into _payload;
                if found then
                    _o := jsonb_set(jsonb_set(_o, '{{2}}', '"pending"'), '{{4}}', to_jsonb(_now));
                    _o := jsonb_set(jsonb_set(_o, '{{8,3}}', '"signalled"'), '{{8,4}}', coalesce(_payload, 'null'::jsonb));
                end if;
            end if;
        end if;
        _out := _out || jsonb_build_array(_o);
    end loop;
    return _out::json;
end
$$;
