-- 0023: drop jobs_status_id (status, id), migration 0006's index for the admin's lists of one
-- status. Every update that is not HOT adds an entry to every full index, and the tick's claim,
-- its record and each group hand-over (the next head un-held) are such updates: this index cost
-- about 8 % of each claim-and-record batch over 1,000 groups (docs/benchmarks.md, "The admin's
-- indexes"). Those lists now merge one range of jobs_type_status_id (type, status, id) per job
-- type, the types from crontick_job_types' skip scan; the per-status counts read
-- jobs_status_updated (status, updated_at desc).
drop index if exists {schema}.jobs_status_id;
