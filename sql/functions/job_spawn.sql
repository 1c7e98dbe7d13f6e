-- crontick_job_spawn: job.spawn (crontick.workflows.children), on the tick's connection: a running job's children,
-- enqueued once. In one call (so one transaction): the children go in through crontick_job_insert_many (every
-- default declared there), get the parent's id, and the spawn is recorded as the parent's step `_name` with
-- their ids as its result (each child keeps `_traceparent`, the parent's span while it spawned, which the
-- child's span links to; and `_start_by`, its deadline to start, null for none), fenced like every step (only
-- while the parent still runs attempt `_attempt`). A spawn already recorded returns its ids and adds nothing; a
-- fenced one adds nothing and returns no row.
create or replace function {schema}.crontick_job_spawn(
    _parent bigint,
    _attempt integer,
    _name text,
    _types text[],
    _payloads jsonb[],
    _run_after timestamptz,
    _max_attempts integer,
    _priority integer,
    _group_key text,
    _traceparent text default null,
    _start_by timestamptz default null
) returns table (ids bigint[])
language plpgsql
as $$
declare
    _ids bigint[];
    _n integer := pg_catalog.cardinality(_types);
begin
    perform 1 from {schema}.jobs j where j.id = _parent and (j.status = 'running') is true and j.attempts = _attempt
        for share;
    if not found then
        return;
    end if;
    select pg_catalog.array_agg(e.value::bigint order by e.n) into _ids
    from {schema}.job_steps s cross join lateral pg_catalog.jsonb_array_elements_text(s.result) with ordinality e(value, n)
    where s.job_id = _parent and s.name = _name and s.kind = 'step';
    if _ids is not null or exists (select 1 from {schema}.job_steps s where s.job_id = _parent and s.name = _name) then
        return query select coalesce(_ids, '{{}}'::bigint[]);
        return;
    end if;
    select pg_catalog.array_agg(i.id) into _ids
    from {schema}.crontick_job_insert_many(_types, _payloads,
        _run_after => case when _run_after is not null then pg_catalog.array_fill(_run_after, array[_n]) end,
        _max_attempts => case when _max_attempts is not null then pg_catalog.array_fill(_max_attempts, array[_n]) end,
        _priorities => case when _priority is not null then pg_catalog.array_fill(_priority, array[_n]) end,
        _group_keys => case when _group_key is not null then pg_catalog.array_fill(_group_key, array[_n]) end,
        _traceparents => case when _traceparent is not null then pg_catalog.array_fill(_traceparent, array[_n]) end,
        _start_by => case when _start_by is not null then pg_catalog.array_fill(_start_by, array[_n]) end) i(id);
    _ids := coalesce(_ids, '{{}}'::bigint[]);
    update {schema}.jobs c set parent_id = _parent where c.id = any(_ids);
    insert into {schema}.job_steps (job_id, name, kind, status, attempt, result, created_at, finished_at)
    values (_parent, _name, 'step', 'done', _attempt, pg_catalog.to_jsonb(_ids), pg_catalog.now(), pg_catalog.now());
    return query select _ids;
end;
$$;
