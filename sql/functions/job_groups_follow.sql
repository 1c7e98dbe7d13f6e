-- crontick_job_groups_follow: the trigger function of jobs_group_settle
-- (sql/migrations/0017_flow_claim.sql), once per UPDATE statement on jobs: every group that
-- crontick_job_group_note noted by job id (the statement ended a job of it, brought one back, an admin
-- retry, stopped one running, a retry or a rescue, or moved one in or out) is settled by
-- crontick_job_groups_settle (its head unheld when nothing of the group runs, held otherwise; the
-- changed jobs and the job after the head held unless they are the head), set-based: 100 groups
-- cost a few statements, not 100 calls. A statement that noted nothing (every update of ungrouped
-- jobs, and the record statement, which settles its own groups) costs one look at the setting. Its
-- own updates (held only) note nothing.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_groups_follow() returns trigger
language plpgsql as $$
declare
    _notes text := current_setting('crontick.group_notes', true);
    _noted bigint[];
    _groups text[];
    _back text[];  -- groups a job came back to (an admin retry) or moved into: their head may have changed
    _ids bigint[];
begin
    if _notes is null or _notes = '' then
        return null;
    end if;
    perform set_config('crontick.group_notes', '', true);
    _noted := string_to_array(rtrim(_notes, ','), ',')::bigint[];
    -- Rows by primary key (`id = any(...)`), never a join the planner may make a scan of the table.
    select array_agg(distinct j.group_key order by j.group_key),
        array_agg(distinct j.group_key) filter (where -j.id = any(_noted)),
        -- Only a row left pending (a retry, a job brought back) may have to be held: a job that
        -- ended or started needs nothing, and most of a record step's batch ended.
        array_agg(j.id) filter (where j.status = 'pending')
    into _groups, _back, _ids
    from {schema}.jobs j
    where j.id = any(array(select abs(n.id) from unnest(_noted) as n(id))) and j.group_key is not null;
    if _groups is null then
        return null;
    end if;
    perform {schema}.crontick_job_groups_settle(_groups, _ids, _back);
    return null;
end
$$;
