-- crontick_job_group_note: the trigger function of jobs_group_update (sql/migrations/0017_flow_claim.sql),
-- a row trigger on the grouped jobs an UPDATE ended, brought back, stopped running or moved. It notes
-- the job's id in the transaction-local setting crontick.group_notes (comma-separated; negative for a
-- job that came back or moved in, whose group's head may have moved back; local to the transaction,
-- so safe behind a pooler), which crontick_job_groups_follow, the statement trigger after it, reads,
-- settles and clears. A job moved out of a group settles the group it left here, at once (rare).
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_group_note() returns trigger
language plpgsql as $$
declare
    _back boolean := old.status in ('done', 'failed', 'cancelled') and new.status not in ('done', 'failed', 'cancelled')
                     or old.group_key is distinct from new.group_key;
begin
    if old.group_key is distinct from new.group_key and old.group_key is not null then
        perform {schema}.crontick_job_group_settle(old.group_key, null);
    end if;
    if new.group_key is not null then
        perform set_config('crontick.group_notes',
            coalesce(current_setting('crontick.group_notes', true), '')
                || case when _back then -new.id else new.id end || ',', true);
    end if;
    return null;
end
$$;
