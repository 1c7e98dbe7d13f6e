-- 0049 (issue 36): job.spawn takes start_by, and a tick counts the jobs its claim expired (jobs.expired).
-- `create or replace` can neither add an argument nor change the columns a function returns, so each old
-- signature goes here (lib/crontick/db/migrate.py) and its function file, applied after the migrations, creates
-- the new one:
-- - crontick_job_spawn gains `_start_by` (each child's deadline to start); its default keeps a previous
--   release's 10-argument call meaning what it meant during a rolling deploy.
-- - crontick_job_claim_due, crontick_job_record_and_claim and crontick_tick_probe return one more column at the
--   end, `expired`; a previous release names the columns it reads, so it reads them as before.
drop function if exists {schema}.crontick_job_spawn(bigint, integer, text, text[], jsonb[], timestamptz, integer, integer,
    text, text);
drop function if exists {schema}.crontick_job_claim_due(timestamptz, int, interval, jsonb);
drop function if exists {schema}.crontick_job_record_and_claim(timestamptz, bigint[], int[], json, boolean, timestamptz,
    text, jsonb, jsonb, timestamptz, int, interval, jsonb);
drop function if exists {schema}.crontick_tick_probe(timestamptz, int, interval, text, jsonb, text, jsonb, jsonb);
