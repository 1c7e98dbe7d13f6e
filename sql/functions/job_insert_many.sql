-- crontick_job_insert_many: the one statement that adds jobs. Every path that creates a job calls it:
-- crontick.enqueue in SQL (sql/functions/enqueue.sql, which Python's crontick.enqueue runs), the debounced
-- half (sql/functions/job_debounce.sql), enqueue_many (sql/queries.sql job_insert_many), inbound hooks
-- (sql/inbound.sql inbound_event_record; the flow-controlled ones through crontick.enqueue), schedule
-- slots (sql/schedules.sql schedule_advance, in the statement that records the slot) and the admin's
-- "enqueue now" (sql/admin_ops.sql admin_schedule_enqueue). tests/jobs/test_queue_job_insert.py fails on any
-- other statement that inserts into jobs.
--
-- N rows as one array per column: element i of each array is row i, and a shorter or missing array
-- reads as nulls. A null takes the default, each declared once below for every path: the id is the
-- next of the jobs' identity (schedules and hooks draw theirs first, for the row that points at the
-- job), the payload {}, run_after now, max_attempts 4 (the column's default too, for an app's own
-- INSERT: tests/jobs/test_queue_job_insert.py holds the two equal), priority 0 (the enqueue paths pass the
-- handler's declared priority= when it has one), start_by null (no deadline: see sql/migrations/0041_start_by.sql).
-- Rows are inserted in array order, and their ids come back in that order. A row whose `key` an
-- active (pending, running or waiting) job holds is not inserted and returns nothing: the caller looks
-- up the holder (crontick.enqueue does). With `_debounce_keys`, every row is a debounce (the caller,
-- crontick_job_debounce, has checked it): a job of the same type and debounce key that is pending and
-- has never been claimed (jobs_debounce_open) takes the row's payload instead, and its id is returned:
--   payload   becomes the newest payload;
--   payloads  appends it, oldest first; it starts as [first payload], and keeps the newest 100
--             entries that add up to at most 16 MiB as JSON text (crontick.jobs.debounce
--             MAX_PAYLOADS and MAX_PAYLOADS_BYTES), dropping the oldest first: each merge rewrites
--             the row, so a burst of large events costs at most 16 MiB a merge, not 100 of them;
--   run_after moves to the row's, never past the open job's debounce_until;
--   start_by   becomes the row's (null: none), the newest enqueue's deadline;
-- its group_key, priority and max_attempts stay. Nothing returns when the open job changed between the
-- conflict and its lock; crontick_job_debounce then calls again. Keys are no arbiter in a debounce.
create or replace function {schema}.crontick_job_insert_many(
    _types text[],
    _payloads jsonb[] default null,
    _ids bigint[] default null,
    _run_after timestamptz[] default null,
    _max_attempts integer[] default null,
    _priorities integer[] default null,
    _keys text[] default null,
    _group_keys text[] default null,
    _scheduled_for timestamptz[] default null,
    _schedules text[] default null,
    _debounce_keys text[] default null,
    _debounce_until timestamptz[] default null,
    _start_by timestamptz[] default null,
    _traceparents text[] default null
) returns setof bigint
language plpgsql
as $$
declare
    _default_payload constant jsonb := '{{}}';
    _default_max_attempts constant integer := 4;
    _default_priority constant integer := 0;
    -- Ids are drawn here for the rows that bring none, so one statement serves both. (The quoted
    -- schema inside the literal: no name of the schema as a string, so every install's body reads alike.)
    _sequence regclass := pg_catalog.pg_get_serial_sequence('{schema}.jobs', 'id');
begin
    -- An enqueuer's W3C trace context (migration 0031), which the job's span links to: one that is not a valid
    -- version-00 traceparent (https://www.w3.org/TR/trace-context/#traceparent-header) is kept as null, as the
    -- spec asks of a receiver, so a bad header passed along never costs a job. crontick.tracing checks the same.
    if _traceparents is not null then
        _traceparents := (select pg_catalog.array_agg(case when t.value ~ '^00-[0-9a-f]{{32}}-[0-9a-f]{{16}}-[0-9a-f]{{2}}$'
                                                           and t.value !~ '^00-0{{32}}-|-0{{16}}-' then t.value end
                                                      order by t.n)
                          from pg_catalog.unnest(_traceparents) with ordinality t(value, n));
    end if;
    -- Three inserts, the same up to their ON CONFLICT (tests/jobs/test_queue_job_insert.py compares them): a
    -- conflict clause costs every row a speculative insertion (a third of enqueue_many's time), so
    -- rows without a key or a debounce go in without one. Rows go in as the scan yields them, in
    -- ordinality order (an ORDER BY would sort what is already sorted: the planner cannot know it is).
    if _keys is null and _debounce_keys is null then
        return query
        insert into {schema}.jobs as j (id, type, payload, run_after, max_attempts, priority, key, group_key,
                                        scheduled_for, schedule, debounce_key, debounce_until, start_by, traceparent)
        select coalesce(r.id, pg_catalog.nextval(_sequence)), r.type, coalesce(r.payload, _default_payload),
            coalesce(r.run_after, pg_catalog.now()), coalesce(r.max_attempts, _default_max_attempts),
            coalesce(r.priority, _default_priority), r.key, r.group_key, r.scheduled_for, r.schedule, r.debounce_key,
            r.debounce_until, r.start_by, r.traceparent
        from rows from (pg_catalog.unnest(_types), pg_catalog.unnest(_payloads), pg_catalog.unnest(_ids),
                        pg_catalog.unnest(_run_after), pg_catalog.unnest(_max_attempts), pg_catalog.unnest(_priorities),
                        pg_catalog.unnest(_keys), pg_catalog.unnest(_group_keys), pg_catalog.unnest(_scheduled_for),
                        pg_catalog.unnest(_schedules), pg_catalog.unnest(_debounce_keys), pg_catalog.unnest(_debounce_until),
                        pg_catalog.unnest(_start_by),
                        pg_catalog.unnest(_traceparents))
            with ordinality r(type, payload, id, run_after, max_attempts, priority, key, group_key, scheduled_for, schedule,
                              debounce_key, debounce_until, start_by, traceparent, n)
        returning j.id;
        return;
    end if;
    if _debounce_keys is null then
        return query
        insert into {schema}.jobs as j (id, type, payload, run_after, max_attempts, priority, key, group_key,
                                        scheduled_for, schedule, debounce_key, debounce_until, start_by, traceparent)
        select coalesce(r.id, pg_catalog.nextval(_sequence)), r.type, coalesce(r.payload, _default_payload),
            coalesce(r.run_after, pg_catalog.now()), coalesce(r.max_attempts, _default_max_attempts),
            coalesce(r.priority, _default_priority), r.key, r.group_key, r.scheduled_for, r.schedule, r.debounce_key,
            r.debounce_until, r.start_by, r.traceparent
        from rows from (pg_catalog.unnest(_types), pg_catalog.unnest(_payloads), pg_catalog.unnest(_ids),
                        pg_catalog.unnest(_run_after), pg_catalog.unnest(_max_attempts), pg_catalog.unnest(_priorities),
                        pg_catalog.unnest(_keys), pg_catalog.unnest(_group_keys), pg_catalog.unnest(_scheduled_for),
                        pg_catalog.unnest(_schedules), pg_catalog.unnest(_debounce_keys), pg_catalog.unnest(_debounce_until),
                        pg_catalog.unnest(_start_by),
                        pg_catalog.unnest(_traceparents))
            with ordinality r(type, payload, id, run_after, max_attempts, priority, key, group_key, scheduled_for, schedule,
                              debounce_key, debounce_until, start_by, traceparent, n)
        on conflict (key) where key is not null and status in ('pending', 'running', 'waiting') do nothing
        returning j.id;
        return;
    end if;
    return query
    insert into {schema}.jobs as j (id, type, payload, run_after, max_attempts, priority, key, group_key,
                                    scheduled_for, schedule, debounce_key, debounce_until, start_by, traceparent)
    select coalesce(r.id, pg_catalog.nextval(_sequence)), r.type, coalesce(r.payload, _default_payload),
        coalesce(r.run_after, pg_catalog.now()), coalesce(r.max_attempts, _default_max_attempts),
        coalesce(r.priority, _default_priority), r.key, r.group_key, r.scheduled_for, r.schedule, r.debounce_key,
        r.debounce_until, r.start_by, r.traceparent
    from rows from (pg_catalog.unnest(_types), pg_catalog.unnest(_payloads), pg_catalog.unnest(_ids),
                    pg_catalog.unnest(_run_after), pg_catalog.unnest(_max_attempts), pg_catalog.unnest(_priorities),
                    pg_catalog.unnest(_keys), pg_catalog.unnest(_group_keys), pg_catalog.unnest(_scheduled_for),
                    pg_catalog.unnest(_schedules), pg_catalog.unnest(_debounce_keys), pg_catalog.unnest(_debounce_until),
                        pg_catalog.unnest(_start_by),
                        pg_catalog.unnest(_traceparents))
        with ordinality r(type, payload, id, run_after, max_attempts, priority, key, group_key, scheduled_for, schedule,
                          debounce_key, debounce_until, start_by, traceparent, n)
    on conflict (type, debounce_key) where debounce_key is not null and status = 'pending' and started_at is null
    do update set
        payload = excluded.payload,
        -- Within 16 MiB as a whole (the usual case, one cast), past 100 the oldest goes (one per merge);
        -- else the newest entries, counted and summed from the newest back, while both bounds hold.
        payloads = (select case when pg_catalog.octet_length(m.merged::text) <= 16777216 then
                               case when pg_catalog.jsonb_array_length(m.merged) > 100 then m.merged - 0 else m.merged end
                           else (select pg_catalog.jsonb_agg(t.value order by t.n)
                                 from (select e.value, e.n, pg_catalog.row_number() over newest as count,
                                           pg_catalog.sum(pg_catalog.octet_length(e.value::text)) over newest as bytes
                                       from pg_catalog.jsonb_array_elements(m.merged) with ordinality e(value, n)
                                       window newest as (order by e.n desc)) t
                                 where t.count <= 100 and t.bytes <= 16777216) end
                    from (select coalesce(j.payloads, pg_catalog.jsonb_build_array(j.payload))
                                 || pg_catalog.jsonb_build_array(excluded.payload) as merged) m),
        run_after = least(excluded.run_after, coalesce(j.debounce_until, 'infinity')),
        -- The reply answers the newest message: its deadline is the newest enqueue's.
        start_by = excluded.start_by,
        traceparent = coalesce(j.traceparent, excluded.traceparent),  -- the first enqueuer's, as a merge keeps its options
        updated_at = pg_catalog.now()
    where j.status = 'pending' and j.started_at is null
    returning j.id;
end;
$$;
