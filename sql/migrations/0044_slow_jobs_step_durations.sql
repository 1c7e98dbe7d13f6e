-- 0044: slow jobs and step durations for GET /api/metrics (issue 37).

-- Slow jobs per type: an attempt that ran CRONTICK_SLOW_JOB_SECONDS or longer (crontick.jobs.runner logs it
-- as slow_job) is counted here by the record statement (sql/functions/job_record_outcomes.sql), whatever
-- it ended in, for the admin's per-type figures and crontick_slow_jobs_last_hour. A column with a
-- constant default: no table rewrite.
alter table {schema}.crontick_type_minutes add column slow int not null default 0;

-- Step durations per job type, without reading job_steps (no index of it covers finished_at, and one
-- would cost every step's write): the statement that records a batch's finished steps (sql/workflows.sql
-- job_steps_record) adds each job.step's duration here, by its job's type, minute, duration bucket and a
-- shard, as crontick_type_minutes (migration 0020) is kept: `slot` is the minute modulo 1500, a row of an
-- older minute is reset in place, so it never grows past types x 1500 x 4 shards x the buckets in use and
-- needs no retention. `bucket` is floor(2 * log2(duration in ms)), 0..47. By type only: step names are the
-- app's to choose, unbounded as series labels.
create table {schema}.crontick_step_minutes (
    type   text        not null,
    slot   smallint    not null,
    shard  smallint    not null,
    bucket smallint    not null,
    minute timestamptz not null,
    steps  int         not null default 0,  -- job.step calls that finished and were recorded
    primary key (type, slot, shard, bucket),
    constraint crontick_step_minutes_bucket_range check (bucket between 0 and 47)
);
alter table {schema}.crontick_step_minutes enable row level security;
