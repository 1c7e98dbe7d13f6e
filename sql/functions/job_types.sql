-- crontick_job_types: the distinct job types in jobs, in name order, at most `_most`, found by a
-- skip scan of jobs_type_status_id (one index probe per type, never a scan of the rows). The
-- admin's lists of one status (sql/admin.sql, sql/admin_ops.sql) merge one range of that index
-- per type from it, and the per-type figures read each type's pending jobs from it. There is no
-- (status, id) index to list from instead: migration 0023 dropped it, because every claim, record
-- and group hand-over of the tick paid an entry in it (docs/benchmarks.md, "The admin's
-- indexes"). Types past `_most` (default 10,000; apps have tens) are not listed.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_types(_most int default 10000) returns setof text
language sql stable as $$
    with recursive t(type, n) as (
        (select j.type, 1 from {schema}.jobs j order by j.type limit 1)
        union all
        select (select j.type from {schema}.jobs j where j.type > t.type order by j.type limit 1), t.n + 1
        from t
        where t.type is not null and t.n < _most
    )
    select t.type from t where t.type is not null
$$;
