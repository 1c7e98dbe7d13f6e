-- crontick_job_pending_priorities: the priorities that have startable jobs (pending, not held, due
-- now or later), smallest first, each found by one probe of jobs_pending_claim (a loose scan of its
-- first column). Called by crontick_job_claim_due (both paths), which reads the due jobs one
-- priority at a time (see its header, "Priorities one at a time"). A SQL function of one SELECT, so
-- the planner inlines it into the claim's statement: the walk stays lazy there, and stops once the
-- claim's batch is full.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_pending_priorities() returns setof int
language sql stable as $$
    with recursive levels (priority) as (
        (select j.priority from {schema}.jobs j where j.status = 'pending' and not j.held order by j.priority limit 1)
        union all
        select (select j.priority from {schema}.jobs j
                where j.status = 'pending' and not j.held and j.priority > l.priority
                order by j.priority limit 1)
        from levels l where l.priority is not null
    )
    select l.priority from levels l where l.priority is not null
$$;
