-- crontick_job_cancel_requested: the trigger function of jobs_cancel_requested (sql/migrations/0040_cancel_children.sql).
-- A running job that crontick.cancel asked to stop (cancel_requested_at) and that then ends its run in any
-- way but done (crontick.Cancelled raised by its next step, a failure, a retry, a sleep, a wait, a lease
-- that ran out) ends `cancelled` instead: no retry, and no job_failed alert (the record statement raises
-- one only for rows it wrote `failed`).
create or replace function {schema}.crontick_job_cancel_requested() returns trigger
language plpgsql as $$
begin
    new.status := 'cancelled';
    new.locked_until := null;
    new.finished_at := pg_catalog.now();
    return new;
end
$$;
