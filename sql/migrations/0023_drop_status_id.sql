-- 0023: the admin's list indexes leave out the rows the tick's hot path rewrites. Every update that
-- is not HOT adds an entry to every index whose predicate its new row matches, and the tick's claim
-- (pending to running), its record (running to done) and each group hand-over (the next head
-- un-held) are such updates. Migration 0006's full `jobs_status_id (status, id)` and
-- `jobs_type_status_id (type, status, id)` took an entry on each of the three. Without them a
-- claim-and-record batch of 100 takes 6-13 % less time, and 5-21 % less over 1,000 groups
-- (docs/benchmarks.md, "The admin's indexes").
-- Now:
-- * jobs_type_status_id holds the ended, waiting and held rows: a job enters it when it ends, parks
--   or is held behind its group, never when it is claimed or un-held;
-- * jobs_pending_type_id holds the startable pending rows by type and id: an un-held head enters it
--   (a new key, which costs what an entry of jobs_pending_due costs);
-- * running rows are in neither: they are few (a batch per live tick), and the admin lists them
--   from jobs_running_lease.
-- The admin's lists merge one range per type (crontick_job_types, crontick_job_ids_below); the
-- per-status counts read jobs_status_updated (status, updated_at desc).
drop index if exists {schema}.jobs_status_id;
drop index if exists {schema}.jobs_type_status_id;
create index jobs_type_status_id on {schema}.jobs (type, status, id)
    where status <> 'running' and (status <> 'pending' or held);
create index jobs_pending_type_id on {schema}.jobs (type, id) where status = 'pending' and not held;
