-- crontick_job_types: the distinct job types of the jobs that are not running, in name order, at
-- most `_most`, found by a skip scan of the two indexes that hold those rows (jobs_type_status_id
-- and jobs_pending_type_id, migration 0023): one probe of each per type, never a scan of the rows.
-- The admin's lists of one status (sql/admin.sql, sql/admin_ops.sql) merge one range per type from
-- it, and the per-type figures read each type's pending jobs. A type whose every job is running is
-- not among them: a list of running jobs reads jobs_running_lease instead. Each `where` repeats its
-- index's predicate word for word, which is what lets the planner use a partial index. Types past
-- `_most` (default 10,000; apps have tens) are not listed.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_types(_most int default 10000) returns setof text
language sql stable as $$
    with recursive t(type, n) as (
        select least(
            (select j.type from {schema}.jobs j
             where j.status <> 'running' and (j.status <> 'pending' or j.held) order by j.type limit 1),
            (select j.type from {schema}.jobs j
             where j.status = 'pending' and not j.held order by j.type limit 1)), 1
        union all
        select least(
            (select j.type from {schema}.jobs j
             where j.type > t.type and j.status <> 'running' and (j.status <> 'pending' or j.held)
             order by j.type limit 1),
            (select j.type from {schema}.jobs j
             where j.type > t.type and j.status = 'pending' and not j.held
             order by j.type limit 1)), t.n + 1
        from t
        where t.type is not null and t.n < _most
    )
    select t.type from t where t.type is not null
$$;
