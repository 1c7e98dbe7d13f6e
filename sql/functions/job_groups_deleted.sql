-- crontick_job_groups_deleted: the trigger function of jobs_group_delete
-- (sql/migrations/0017_flow_claim.sql), once per DELETE statement on jobs: each group that lost a
-- job that had not ended is settled (crontick_job_group_settle: its next job may be its head now).
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_groups_deleted() returns trigger
language plpgsql as $$
begin
    perform {schema}.crontick_job_group_settle(g.group_key, null)
    from (select distinct o.group_key from old_rows o
          where o.group_key is not null and o.status not in ('done', 'failed', 'cancelled')
          order by 1) g;
    return null;
end
$$;
