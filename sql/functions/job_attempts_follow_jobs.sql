-- crontick_job_attempts_follow_jobs: the trigger function of jobs_delete_attempts and
-- jobs_truncate_attempts, the statement-level triggers on jobs that
-- sql/migrations/0008_record_function.sql creates. Every statement that deletes jobs (retention,
-- the admin's delete) or truncates them takes their attempts history (job_attempts) with them.
-- This was the duty of a foreign key, dropped by 0008 (issue 13): job_attempts rows are written
-- only by the statements that record or rescue an attempt, for rows the same statement has just
-- updated (and so locked), so the job exists by construction; the key checked it again, one
-- trigger call per attempt, on the hottest statement of all.
-- Durable steps (issue 21, sql/migrations/0019_steps.sql): the job's recorded steps (job_steps) go
-- with it the same way. (On a fresh install this body exists before job_steps does; no job is
-- deleted during a migrate.)
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_attempts_follow_jobs() returns trigger
language plpgsql as $$
begin
    if tg_op = 'TRUNCATE' then
        truncate {schema}.job_attempts;
        truncate {schema}.job_steps;  -- durable steps
    else
        delete from {schema}.job_attempts a using deleted_jobs d where a.job_id = d.id;
        delete from {schema}.job_steps s using deleted_jobs d where s.job_id = d.id;  -- durable steps
    end if;
    return null;
end
$$;
