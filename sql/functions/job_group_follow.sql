-- crontick_job_group_follow: the trigger function of jobs_group_insert
-- (sql/migrations/0017_flow_claim.sql; updates and deletes settle their groups in
-- crontick_job_groups_follow and crontick_job_groups_deleted), which together keep jobs.held true for every
-- grouped pending job that may not start yet (CONTRACT.md "Flow control", Groups): one that is not
-- its group's head (the group's first job, by id, that has not ended), or whose group has a job
-- running. The claim (sql/functions/job_claim_due.sql) reads only unheld rows, so a group puts at
-- most its head in front of it, however many jobs it holds.
-- It runs under a per-group lock (a transaction-scoped advisory lock keyed by the group, so safe
-- behind a pooler), and each statement here reads a snapshot taken after that lock was granted:
-- an insert and the end of its group's head, in two transactions, see one another whichever
-- commits first, so no job is left held with nothing ahead of it. An insert takes its id under
-- the lock too, so a group's ids follow the order its inserts commit in (the order it runs in).
-- The lock lasts until the writer commits: keep transactions that enqueue grouped jobs short.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_group_follow() returns trigger
language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        perform pg_advisory_xact_lock(1668444014, hashtext(new.group_key));
        new.id := nextval(pg_get_serial_sequence(quote_ident(tg_table_schema) || '.' || quote_ident(tg_table_name), 'id'));
        new.held := new.status = 'pending' and exists (
            select 1 from {schema}.jobs e
            where e.group_key = new.group_key and e.status not in ('done', 'failed', 'cancelled'));
    end if;
    return new;
end
$$;
