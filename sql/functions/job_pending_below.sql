-- crontick_job_pending_below: the newest `_limit` ids below `_before` of one type's pending jobs that
-- are due (`_due`: run_after has come) or due later, newest first: the held ones from
-- jobs_type_status_id, the startable ones from jobs_pending_type_id (migration 0023), each arm with
-- its index's predicate word for word. `run_after + interval '0 s'` has no statistics, so it is
-- estimated at a third of the rows and each range is read in id order until `_limit` are found. On
-- the column itself the estimate came from every job's run_after (mostly long past: the done ones),
-- 1 % of a type's pending jobs, and the plan read the type's whole pending range instead (on 10,000
-- pending jobs, 15 times the buffers). The admin's due and scheduled lists (sql/admin_ops.sql) call
-- it once per type and merge the results by id.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_pending_below(_type text, _due boolean, _before bigint, _limit int)
returns setof bigint
language sql stable as $$
    select x.id from (
        (select j.id from {schema}.jobs j
         where j.type = _type and j.status = 'pending' and j.held and j.id < _before
           and (j.run_after + interval '0 s' <= now()) = _due
           and j.status <> 'running' and (j.status <> 'pending' or j.held)
         order by j.id desc limit _limit)
        union all
        (select j.id from {schema}.jobs j
         where j.type = _type and j.id < _before and (j.run_after + interval '0 s' <= now()) = _due
           and j.status = 'pending' and not j.held
         order by j.id desc limit _limit)
    ) x
    order by x.id desc
    limit _limit
$$;
