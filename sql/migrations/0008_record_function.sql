-- 0008: the tick's record step as a function, whose plan each connection keeps, and the
-- attempts history without a foreign-key check per row (issue 13: the in-process drain at
-- half the plain-SQL limit; EXPLAIN ANALYZE of the record statement showed 2-2.5 ms of
-- planning and 0.7-1.1 ms of foreign-key triggers per batch of 100, against 4-6 ms of execution).
--
-- The functions live in files named after them, applied by `crontick migrate` after the
-- migrations: the record step is sql/functions/job_record_outcomes.sql, the triggers' function
-- sql/functions/job_attempts_follow_jobs.sql. This migration keeps the table changes.

-- job_attempts rows are written only by the statements that record or rescue an attempt, for
-- rows the same statement has just updated (and so locked): the job exists, by construction.
-- The foreign key checked it again, one trigger call per attempt, on the hottest statement of
-- all. Its other duty, taking the history with the job when a job is deleted (retention, the
-- admin's delete), is done by one statement-level trigger per delete instead.
alter table {schema}.job_attempts drop constraint job_attempts_job_id_fkey;

-- requires: sql/functions/job_attempts_follow_jobs.sql
create trigger jobs_delete_attempts after delete on {schema}.jobs
    referencing old table as deleted_jobs
    for each statement execute function {schema}.crontick_job_attempts_follow_jobs();
create trigger jobs_truncate_attempts after truncate on {schema}.jobs
    for each statement execute function {schema}.crontick_job_attempts_follow_jobs();
