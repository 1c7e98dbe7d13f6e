-- crontick_job_groups_settle: settle each of `_groups` as crontick_job_group_settle settles one (its
-- head unheld when nothing of the group runs, held otherwise), set-based; `_pending` are rows the
-- caller left pending (a retry, a job brought back or woken), held unless they are their group's
-- head, and in each group of `_back` (a job came back to it or moved in) the job after the new
-- head is held too. The groups' locks are taken in group_key order, so two callers settling the
-- same groups never wait on each other in a cycle, and each statement after them reads a snapshot
-- taken once they are granted (see sql/functions/job_group_follow.sql).
-- Called by crontick_job_groups_follow (the trigger that settles what an UPDATE noted) and by
-- crontick_job_record_outcomes, which settles its own batch's groups in the same transaction right
-- after its statement: it knows them from what it wrote, so its rows skip the per-row note (the
-- row trigger's calls, and the re-reading of the noted rows, were a fifth of a grouped batch's
-- record step).
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_groups_settle(_groups text[], _pending bigint[], _back text[])
returns void
language plpgsql as $$
begin
    perform pg_advisory_xact_lock(1668444014, hashtext(g)) from unnest(_groups) as u(g) order by g;
    with head as materialized (
        select u.g, h.id,
            exists (select 1 from {schema}.jobs r where r.group_key = u.g and r.status = 'running') as busy
        from unnest(_groups) as u(g)
        cross join lateral (
            select e.id from {schema}.jobs e
            where e.group_key = u.g and e.status not in ('done', 'failed', 'cancelled') order by e.id limit 1) h
    ), unheld as (
        update {schema}.jobs j set held = h.busy
        from head h
        where j.id = any(array(select d.id from head d)) and j.id = h.id and j.status = 'pending' and j.held <> h.busy
    ), maybe as (
        -- Rows that may have to be held: the caller's pending rows, and in a group a job came back
        -- to, the job after the new head (the old head).
        select u.id from unnest(_pending) as u(id)
        union
        select (select min(e.id) from {schema}.jobs e
                where e.group_key = h.g and e.id > h.id and e.status not in ('done', 'failed', 'cancelled'))
        from head h where h.g = any(_back)
    )
    update {schema}.jobs j set held = true
    from head h
    where j.id = any(array(select m.id from maybe m where m.id is not null))
      and j.group_key = h.g and j.id <> h.id and j.status = 'pending' and not j.held;
end
$$;
