-- 0040: workflows that outlive a tick (issue 36): cancelling a running job, and child jobs.
-- * cancel_requested_at: crontick.cancel asked a running job to stop (sql/functions/cancel.sql); its next
--   job.step, job.sleep or job.wait_for raises crontick.Cancelled, and whatever outcome it is then
--   recorded with (a failure, a retry, a park) becomes `cancelled` (jobs_cancel_requested, below).
-- * parent_id: the job whose job.spawn enqueued this one (crontick.workflows.children); null for every
--   other job. When a child ends, jobs_child_ended wakes its parent's job.join once all its children
--   have ended.
-- Both null on every row a previous release writes, and neither trigger fires for those rows.
-- requires: sql/functions/job_cancel_requested.sql
-- requires: sql/functions/job_child_ended.sql
alter table {schema}.jobs add column cancel_requested_at timestamptz, add column parent_id bigint;
create index jobs_parent on {schema}.jobs (parent_id) where parent_id is not null;
create trigger jobs_cancel_requested before update of status on {schema}.jobs
    for each row when (old.cancel_requested_at is not null and old.status = 'running'
                       and new.status in ('pending', 'waiting', 'failed'))
    execute function {schema}.crontick_job_cancel_requested();
create trigger jobs_child_ended after update of status on {schema}.jobs
    for each row when (new.parent_id is not null and new.status in ('done', 'failed', 'cancelled')
                       and old.status not in ('done', 'failed', 'cancelled'))
    execute function {schema}.crontick_job_child_ended();
