-- crontick_job_debounce: the debounced half of crontick.enqueue (sql/functions/enqueue.sql calls it
-- when a debounce_key is given; crontick.enqueue(..., debounce=crontick.Debounce(...)) in Python
-- and debounced inbound hooks reach it that way). It checks the arguments, and the upsert on
-- jobs_debounce_open (sql/migrations/0018_enqueue_flow.sql) is crontick_job_insert_many's
-- (sql/functions/job_insert_many.sql says how payloads are kept): the first enqueue of a key inserts the
-- job, due in `_seconds`, with debounce_until = now + `_max_seconds` (null: no cap); every later enqueue
-- of the same (type, key) while that job is pending and was never claimed merges into it: its payload
-- becomes the newest, `payloads` appends it, and run_after moves to now + `_seconds`, never past
-- debounce_until;
-- group_key, priority and max_attempts stay the first enqueue's; start_by becomes this one's. Concurrent enqueues of one key
-- serialise on the index entry: one inserts, the others wait for it and then merge. A claim that
-- locked the job first wins: the merging enqueue then finds no open job (the claimed row left the
-- index) and inserts a new one, which (with a group_key) runs after the claimed one.
-- A debounced payload over 16 MiB as JSON text is refused (SQLSTATE 22001): the newest payload is
-- always kept, so it could not fit the bound. Enqueue it without a debounce, or keep it elsewhere.
-- Returns the job's id: the new job's, or the one merged into.
create or replace function {schema}.crontick_job_debounce(
    _type text,
    _payload jsonb,
    _run_after timestamptz,
    _max_attempts integer,
    _key text,
    _group_key text,
    _priority integer,
    _debounce_key text,
    _seconds double precision,
    _max_seconds double precision,
    _start_by timestamptz default null,
    _traceparent text default null
) returns bigint
language plpgsql
as $$
#variable_conflict use_column
declare
    _id bigint;
    _job text := quote_literal(_type);
begin
    if _debounce_key is null or _debounce_key = '' then
        raise exception 'crontick.enqueue(%): expected a non-empty debounce_key with debounce_seconds, got %', _job,
            coalesce(quote_literal(_debounce_key), 'null') using errcode = '22023';
    end if;
    if _seconds is null or not (_seconds >= 0 and _seconds <= 2592000) then
        raise exception 'crontick.enqueue(%): expected debounce_seconds between 0 and 2592000 (30 days), got %', _job,
            coalesce(_seconds::text, 'null') using errcode = '22023';
    end if;
    if _max_seconds is not null and not (_max_seconds >= _seconds and _max_seconds <= 2592000) then
        raise exception 'crontick.enqueue(%): expected debounce_max_seconds between debounce_seconds (%) and 2592000, got %',
            _job, _seconds, _max_seconds using errcode = '22023';
    end if;
    if _key is not null then
        raise exception 'crontick.enqueue(%): expected key or a debounce, got both (key %)', _job, quote_literal(_key)
            using errcode = '22023';
    end if;
    if _run_after is not null then
        raise exception 'crontick.enqueue(%): expected run_after or a debounce (which sets run_after), got both', _job
            using errcode = '22023';
    end if;
    if octet_length(_payload::text) > 16777216 then
        raise exception 'crontick.enqueue(%): expected a debounced payload of at most 16 MiB (16,777,216 bytes as JSON text), got % bytes; enqueue it without a debounce, or keep it in your own storage and pass its key',
            _job, octet_length(_payload::text) using errcode = '22001';
    end if;
    -- Twice at most: the merge's WHERE is false only if the open job changed between the conflict
    -- and its lock (PostgreSQL then retries the conflict itself), so the second pass inserts or merges.
    for _ in 1..2 loop
        select i.id into _id
        from {schema}.crontick_job_insert_many(array[_type], array[_payload],
            _run_after => array[pg_catalog.now() + pg_catalog.make_interval(secs => _seconds)],
            _max_attempts => array[_max_attempts], _priorities => array[_priority], _group_keys => array[_group_key],
            _debounce_keys => array[_debounce_key],
            _debounce_until => array[pg_catalog.now() + pg_catalog.make_interval(secs => _max_seconds)],
            _start_by => array[_start_by],
            _traceparents => case when _traceparent is not null then array[_traceparent] end) i(id);
        if _id is not null then
            return _id;
        end if;
    end loop;
    raise exception 'crontick.enqueue(%): expected a job id, got none (debounce key % contended)', _job,
        quote_literal(_debounce_key) using errcode = '40001';
end;
$$;
