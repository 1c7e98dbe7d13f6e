-- 0024: jobs_status_updated (status, updated_at desc) holds only ended jobs (done, failed,
-- cancelled): the rows retention deletes oldest first and the admin counts per status. It held
-- every row, so each claim (pending to running), each group hand-over (the next head un-held) and
-- each retry added an entry that no statement reads: an update that is not HOT enters every index
-- whose predicate its new row matches. A job now enters it once, when it ends. Pending, running
-- and waiting jobs are counted from the indexes that already hold them (jobs_pending_due and
-- jobs_group_active, jobs_running_lease, jobs_waiting_until; sql/admin.sql admin_stats_counts).
-- Measured on the claim-and-record loop of bench.groups, counted in instructions under valgrind
-- (docs/benchmarks.md, "Ended jobs only in jobs_status_updated"): 4 % fewer per batch without
-- groups, 8 % over 1,000 groups, 7 % for the plain-SQL reference loop.
drop index if exists {schema}.jobs_status_updated;
create index jobs_status_updated on {schema}.jobs (status, updated_at desc)
    where status in ('done', 'failed', 'cancelled');
