-- 0010: the drain's record step writes a third less (issue 13: the in-process drain at 0.5x the
-- plain-SQL loop; EXPLAIN ANALYZE put 0.5 ms of a batch's 2 ms record step in the job_attempts
-- insert, one row per succeeded attempt, and 0.1 ms in a self-join that read each row's claim time).
--
-- A job now keeps when its current attempt started (started_at, set by the claim). The attempt
-- that finishes a job successfully, most attempts by far, needs no history row of its own: the
-- done job's row says it all (attempts, started_at, finished_at), and admin_job_attempts shows
-- it as the history's last entry. Attempts that retried, failed, or ran past their lease still
-- get their row. A done job retried by hand first copies that entry into job_attempts (the
-- admin's retry statements), so its history survives the retry.
--
-- Jobs finished before this migration keep the history rows they have; admin_job_attempts adds
-- the done job's entry only where no succeeded row exists for its last attempt.

alter table {schema}.jobs add column started_at timestamptz;

-- Jobs running across the upgrade: their claim set updated_at when it set the lease.
update {schema}.jobs set started_at = updated_at where status = 'running';

-- The functions, applied by `crontick migrate` after the migrations: the claim
-- (sql/functions/job_claim_due.sql) now also sets started_at; the record step
-- (sql/functions/job_record_outcomes.sql) reads it instead of joining the job's row again and
-- writes no history row for a succeeded attempt; and the drain records one batch and claims the
-- next in one statement (sql/functions/job_record_and_claim.sql, new here).
