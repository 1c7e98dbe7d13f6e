-- enqueue: crontick's SQL API for adding a job, for any driver or language on the same database
-- (psycopg2, SQLAlchemy, asyncpg, Django, Prisma, node-postgres), inside the caller's own
-- transaction: a rolled-back transaction enqueues nothing. crontick.enqueue() in Python calls it
-- too (sql/queries.sql job_insert), so both share one implementation. Named arguments, defaults as
-- in Python:
--   select crontick.enqueue('send_email', '{"to": "ada@example.com"}', key => 'welcome:42');
--   select crontick.enqueue('whatsapp_reply', '{"text": "hi"}', group_key => 'conv:42', priority => -10,
--                           debounce_key => 'reply:42', debounce_seconds => 3, debounce_max_seconds => 20);
-- With `start_by`, a job not started by then never starts: a tick that finds it ends it `cancelled`, its
-- last_error beginning with `expired` (sql/functions/job_claim_due.sql), no attempt spent, no alert:
--   select crontick.enqueue('whatsapp_reply', '{"text": "hi"}', start_by => now() + interval '10 minutes');
-- With `key`, a job already pending, running or waiting with that key wins and its id is returned (the
-- partial unique index jobs_key_active). With `debounce_key` (and debounce_seconds), a job of the
-- same type with that key that has not started (pending, never claimed: jobs_debounce_open) takes
-- this enqueue instead of a new job: its payload becomes this one, `payloads` appends it (oldest
-- first, the newest 100 within 16 MiB kept), and its run_after moves to now + debounce_seconds, never past its
-- debounce_until (its first enqueue + debounce_max_seconds). The merged job keeps its group_key,
-- priority and max_attempts. Returns the job's id (the merged job's, on a merge). In its own schema
-- it is crontick.enqueue; `traceparent` (a W3C traceparent, as an OpenTelemetry SDK's propagator writes it) is
-- the enqueuer's span, which the job's span links to when the app traces; a malformed one is kept as
-- null (sql/functions/job_insert_many.sql). Under CRONTICK_SCHEMA=public it is public.crontick_enqueue (a plain
-- `enqueue` there would sit among the app's own functions).
create or replace function {schema}.{api_enqueue}(
    type text,
    payload jsonb default '{{}}'::jsonb,
    run_after timestamptz default null,
    max_attempts integer default null,
    key text default null,
    group_key text default null,
    priority integer default null,
    debounce_key text default null,
    debounce_seconds double precision default null,
    debounce_max_seconds double precision default null,
    start_by timestamptz default null,
    traceparent text default null
) returns bigint
language plpgsql
security definer  -- runs as crontick's role: EXECUTE alone lets another role call it (docs/security.md)
as $$
#variable_conflict use_column
declare
    _id bigint;
    _job text := quote_literal({api_enqueue}.type);
    _long text;
    _bytes integer;
begin
    if {api_enqueue}.type is null or {api_enqueue}.type = '' then
        raise exception 'crontick.enqueue: expected a non-empty job type, got %', coalesce(quote_literal({api_enqueue}.type), 'null')
            using errcode = '22023';
    end if;
    -- A type sits in indexes (jobs_type_status_id, and jobs_debounce_open beside a key of up to
    -- {key_max_bytes} bytes): crontick.text.TYPE_MAX_BYTES says why it is bounded; Python checks the same.
    if octet_length({api_enqueue}.type) > {type_max_bytes} then
        raise exception 'crontick.enqueue: expected a job type of at most % bytes (UTF-8), got %',
            to_char({type_max_bytes}, 'FM999,999'), octet_length({api_enqueue}.type) using errcode = '22001';
    end if;
    if {api_enqueue}.max_attempts is not null and {api_enqueue}.max_attempts < 1 then
        raise exception 'crontick.enqueue(%): expected max_attempts >= 1, got %', _job, {api_enqueue}.max_attempts
            using errcode = '22023';
    end if;
    if {api_enqueue}.start_by is not null and {api_enqueue}.run_after > {api_enqueue}.start_by then
        raise exception 'crontick.enqueue(%): expected run_after at or before start_by (it could never start), got run_after % and start_by %',
            _job, {api_enqueue}.run_after, {api_enqueue}.start_by using errcode = '22023';
    end if;
    if {api_enqueue}.group_key = '' then
        raise exception 'crontick.enqueue(%): expected a non-empty group_key or null, got %', _job, quote_literal('')
            using errcode = '22023';
    end if;
    -- Each key sits in a btree index, whose entries PostgreSQL caps at 2,704 bytes: 2,048 bytes always fit
    -- (crontick.text.KEY_MAX_BYTES, filled in as {key_max_bytes}, says why; Python checks the same). One cheap test covers the three keys;
    -- which one is over (the first, in argument order) is looked up only when one is.
    if greatest(octet_length({api_enqueue}.key), octet_length({api_enqueue}.group_key),
                octet_length({api_enqueue}.debounce_key)) > {key_max_bytes} then
        select k.name, octet_length(k.value) into _long, _bytes
        from (values (1, 'key', {api_enqueue}.key), (2, 'group_key', {api_enqueue}.group_key),
                     (3, 'debounce_key', {api_enqueue}.debounce_key)) k(n, name, value)
        where octet_length(k.value) > {key_max_bytes}
        order by k.n
        limit 1;
        raise exception 'crontick.enqueue(%): expected % of at most % bytes (UTF-8), got %', _job, _long,
            to_char({key_max_bytes}, 'FM999,999'), _bytes using errcode = '22001';
    end if;
    if {api_enqueue}.debounce_key is not null or {api_enqueue}.debounce_seconds is not null
       or {api_enqueue}.debounce_max_seconds is not null then
        return {schema}.crontick_job_debounce(
            {api_enqueue}.type, {api_enqueue}.payload, {api_enqueue}.run_after,
            {api_enqueue}.max_attempts, {api_enqueue}.key, {api_enqueue}.group_key, {api_enqueue}.priority,
            {api_enqueue}.debounce_key, {api_enqueue}.debounce_seconds, {api_enqueue}.debounce_max_seconds,
            {api_enqueue}.start_by, {api_enqueue}.traceparent);
    end if;
    -- Twice at most: the job holding the key may finish between the insert that yields to it and
    -- the select that looks for it; the second insert then succeeds.
    -- The insert, and every default of a null argument, is crontick_job_insert_many's (sql/functions/job_insert_many.sql).
    for _ in 1..2 loop
        select i.id into _id
        from {schema}.crontick_job_insert_many(array[{api_enqueue}.type], array[{api_enqueue}.payload],
            _run_after => array[{api_enqueue}.run_after], _max_attempts => array[{api_enqueue}.max_attempts],
            _priorities => array[{api_enqueue}.priority], _group_keys => array[{api_enqueue}.group_key],
            _start_by => case when {api_enqueue}.start_by is not null then array[{api_enqueue}.start_by] end,
            -- No key: no array, so the row goes in without ON CONFLICT and its cost.
            _keys => case when {api_enqueue}.key is not null then array[{api_enqueue}.key] end,
            _traceparents => case when {api_enqueue}.traceparent is not null then array[{api_enqueue}.traceparent] end) i(id);
        if _id is not null then
            return _id;
        end if;
        select id into _id from {schema}.jobs
        where key = {api_enqueue}.key and status in ('pending', 'running', 'waiting');
        if _id is not null then
            return _id;
        end if;
    end loop;
    raise exception 'crontick.enqueue(%): expected a job id, got none (key % contended)', _job, quote_literal({api_enqueue}.key)
        using errcode = '40001';
end;
$$;
