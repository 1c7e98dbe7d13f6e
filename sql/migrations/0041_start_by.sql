-- 0041: start_by (issue 36, "Cancel and expiry"): a job not started by then is never started. The claim
-- (sql/functions/job_claim_due.sql, its `expire` part) ends such a job `cancelled`, its last_error beginning
-- with `expired`, no attempt spent and no alert, in the statement that claims the batch (no statement of its
-- own). Null on every row a previous release writes, and on every job enqueued without it.
-- crontick_job_insert_many, crontick_job_debounce and crontick.enqueue gain a start_by argument (defaulted: every
-- existing call, positional or named, means what it meant); their old signatures go in 0045, which adds
-- traceparent beside it and carries crontick.enqueue's grants over to the new signature.
alter table {schema}.jobs add column start_by timestamptz;
-- What the claim's `expire` part reads: the pending jobs that carry a start_by, by start_by, so the read stops at
-- the first entry still in the future. Empty, and free to probe, while nobody uses start_by.
create index jobs_start_by on {schema}.jobs (start_by) where start_by is not null and status = 'pending';
