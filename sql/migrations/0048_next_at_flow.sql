-- 0048: crontick_job_next_at takes the claim's flow argument (issue 35): a paused rate limit's types, which
-- only the code knows (crontick.flow.claim_args), no longer count as due, so a paused limit books no wake-up a
-- minute. `create or replace` cannot add an argument, so the old signature goes (lib/crontick/db/migrate.py)
-- and sql/functions/job_next_at.sql creates the new one after the migrations; its argument has a default,
-- so the callers that pass none (the record statement) keep working unchanged.
drop function if exists {schema}.crontick_job_next_at();
