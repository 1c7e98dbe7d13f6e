-- cancel: crontick's SQL API for cancelling a job (CONTRACT.md "Workflows that outlive a tick"), for any
-- driver or language on the same database, inside the caller's own transaction; crontick.cancel(conn,
-- job_id) in Python calls it too (sql/workflows.sql job_cancel):
--   select crontick.cancel(42);
-- A pending (or sleeping) or waiting job ends `cancelled` at once. A running one is asked to stop
-- (cancel_requested_at): its next job.step, job.sleep or job.wait_for raises crontick.Cancelled, and it
-- ends `cancelled` however its run ends, done excepted (jobs_cancel_requested,
-- sql/migrations/0040_cancel_children.sql). Its unended children (job.spawn) are cancelled with it.
-- Returns whether it cancelled (or asked): false for a job that has ended or does not exist. No alert.
-- In its own schema it is crontick.cancel; under CRONTICK_SCHEMA=public it is public.crontick_cancel.
create or replace function {schema}.{api_cancel}(
    job_id bigint
) returns boolean
language plpgsql
security definer  -- runs as crontick's role: EXECUTE alone lets another role call it (docs/security.md)
as $$
declare
    _status text;
    _child bigint;
begin
    select j.status into _status from {schema}.jobs j where j.id = {api_cancel}.job_id for update;
    if _status in ('pending', 'waiting') then
        update {schema}.jobs j set status = 'cancelled', locked_until = null, finished_at = pg_catalog.now(),
            updated_at = pg_catalog.now()
        where j.id = {api_cancel}.job_id;
    elsif _status = 'running' then
        update {schema}.jobs j set cancel_requested_at = coalesce(j.cancel_requested_at, pg_catalog.now()),
            updated_at = pg_catalog.now()
        where j.id = {api_cancel}.job_id;
    else
        return false;
    end if;
    for _child in
        select c.id from {schema}.jobs c
        where c.parent_id = {api_cancel}.job_id and c.status in ('pending', 'waiting', 'running')
        order by c.id
    loop
        perform {schema}.{api_cancel}(_child);
    end loop;
    return true;
end;
$$;
