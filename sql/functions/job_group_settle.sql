-- crontick_job_group_settle: after a job of `_group` ended, stopped running, came back (an admin
-- retry) or moved: the head is unheld when nothing of the group runs, held otherwise; `_self`
-- (the job that changed) and the job after the head are held unless they are the head. Every
-- read is a first index entry (jobs_group_active, jobs_group_running) or a primary key. Called by
-- crontick_job_groups_deleted (a DELETE of jobs that had not ended) and crontick_job_group_note (a
-- job moved out of its group); crontick_job_groups_follow does the same for a statement's updates,
-- set-based.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_group_settle(_group text, _self bigint) returns void
language plpgsql as $$
declare
    _head bigint;
    _busy boolean;
begin
    perform pg_advisory_xact_lock(1668444014, hashtext(_group));
    select id into _head from {schema}.jobs
    where group_key = _group and status not in ('done', 'failed', 'cancelled') order by id limit 1;
    if _head is null then
        return;
    end if;
    _busy := exists (select 1 from {schema}.jobs where group_key = _group and status = 'running');
    update {schema}.jobs set held = _busy where id = _head and status = 'pending' and held <> _busy;
    update {schema}.jobs set held = true
    where id in (_self, (select min(id) from {schema}.jobs
                         where group_key = _group and id > _head and status not in ('done', 'failed', 'cancelled')))
      and id <> _head and group_key = _group and status = 'pending' and not held;
end
$$;
