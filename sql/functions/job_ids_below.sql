-- crontick_job_ids_below: the newest `_limit` ids below `_before` of the jobs of one type and status,
-- newest first, each read from the index that holds such rows (migration 0023): ended, waiting and
-- held pending rows from jobs_type_status_id, startable pending ones from jobs_pending_type_id,
-- running ones from jobs_running_lease (a batch per live tick). Each arm repeats its index's
-- predicate word for word (so the planner may use the partial index) and runs only for the
-- statuses it holds. The admin's job lists (sql/admin.sql) call it once per type or per status and
-- merge the results by id; the page's rows are then read by primary key.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_ids_below(_type text, _status text, _before bigint, _limit int)
returns setof bigint
language sql stable as $$
    select x.id from (
        (select j.id from {schema}.jobs j
         where j.type = _type and j.status = _status and j.id < _before
           and j.status <> 'running' and (j.status <> 'pending' or j.held)
         order by j.id desc limit _limit)
        union all
        (select j.id from {schema}.jobs j
         where _status = 'pending' and j.type = _type and j.id < _before
           and j.status = 'pending' and not j.held
         order by j.id desc limit _limit)
        union all
        (select j.id from {schema}.jobs j
         where _status = 'running' and j.type = _type and j.id < _before and j.status = 'running'
         order by j.id desc limit _limit)
    ) x
    order by x.id desc
    limit _limit
$$;
