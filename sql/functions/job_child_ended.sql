-- crontick_job_child_ended: the trigger function of jobs_child_ended (sql/migrations/0040_cancel_children.sql),
-- for a child job (job.spawn, crontick.workflows.children) that ended (done, failed or cancelled). Once
-- every child of its parent has ended, the parent's join is signalled on its key ('crontick.join:' and
-- the parent's id, through the SQL API's signal, so a parent already waiting in job.join is woken at
-- once, and one not yet waiting finds the signal kept when its wait begins). Children that end in
-- concurrent transactions take the parent's advisory lock first, so the last to commit sees the others
-- ended (each statement here reads a fresh snapshot).
create or replace function {schema}.crontick_job_child_ended() returns trigger
language plpgsql as $$
declare
    _key text := 'crontick.join:' || new.parent_id::text;
begin
    perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(_key, 0));
    if exists (select 1 from {schema}.jobs c where c.parent_id = new.parent_id
               and c.status not in ('done', 'failed', 'cancelled')) then
        return null;
    end if;
    -- Not again while one is kept (another row of this statement, or an earlier end, sent it). A stale
    -- signal is harmless: job.join reads its children again on every wake, and waits again if need be.
    if exists (select 1 from {schema}.crontick_signals s where s.event_key = _key) then
        return null;
    end if;
    perform {schema}.{api_signal}(_key, pg_catalog.jsonb_build_object('ended'::text, true));
    return null;
end
$$;
