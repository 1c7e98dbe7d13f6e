-- 0022: the record statement settles its own batch's groups (issue 20's groups drain; the groups
-- are sql/migrations/0017_flow_claim.sql's). Until now each grouped job the record step ended was
-- noted by a row trigger (a PL/pgSQL call per job) and its group settled by the statement trigger,
-- which read the noted rows back by id; the record statement knows its rows' groups already.
-- crontick_job_record_outcomes now sets crontick.group_settle = 'record' (transaction-local) while
-- its statement runs, so its rows are not noted, and then settles their groups itself, in the same
-- transaction, with crontick_job_groups_settle, the set-based settle the trigger calls too. Every
-- other writer (the admin, a rescue, a plain UPDATE from any driver) is noted as before.
-- requires: sql/functions/job_groups_settle.sql
-- requires: sql/functions/job_groups_follow.sql
-- requires: sql/functions/job_group_note.sql
drop trigger jobs_group_update on {schema}.jobs;
create trigger jobs_group_update after update of status, group_key on {schema}.jobs
    for each row when (
        (old.group_key is not null or new.group_key is not null)
        and current_setting('crontick.group_settle', true) is distinct from 'record'
        and ((old.status in ('done', 'failed', 'cancelled')) <> (new.status in ('done', 'failed', 'cancelled'))
             or old.status = 'running' and new.status <> 'running'
             or old.group_key is distinct from new.group_key))
    execute function {schema}.crontick_job_group_note();
