-- 0020: the admin's second round (issue 23): schedule pause and "enqueue now", per-type figures,
-- the audit page and the job page's tick of each attempt.

-- A paused schedule's slots are decided as skipped with the reason `paused` (the tick, while
-- the pause row in crontick_pauses stands, and the resume for what came due before it).
alter table {schema}.crontick_schedule_slots drop constraint crontick_schedule_slots_outcome_valid;
alter table {schema}.crontick_schedule_slots add constraint crontick_schedule_slots_outcome_valid
    check (outcome in ('enqueued', 'coalesced', 'dropped_cap', 'skipped_late', 'paused'));

-- "Enqueue now": a manual run takes no slot (no crontick_schedule_slots row, so the at-most-once
-- key of the schedule's real slots is untouched); its job has `schedule` set and no
-- `scheduled_for`, and the latest one is kept here for the schedules page.
alter table {schema}.crontick_schedules
    add column manual_job_id bigint,
    add column manual_at timestamptz;

-- Per-type figures without reading jobs: the record statement (job_record_outcomes) adds each
-- batch's attempts here, by type, minute, duration bucket and a shard. A ring: `slot` is the
-- minute modulo 1500 (25 hours), and a row whose `minute` is older than the one being written is
-- reset in place, so the table never grows past types x 1500 x 4 shards x the buckets in use and
-- needs no retention. The shard (the backend's pid modulo 4) keeps concurrent ticks, which record
-- the same type in the same minute, off each other's row locks. `bucket` is
-- floor(2 * log2(duration in ms)), 0..47: durations within a factor of about 1.41, so a p50 or
-- p95 read from it is within about 20 % (crontick.admin.figures).
create table {schema}.crontick_type_minutes (
    type    text        not null,
    slot    smallint    not null,
    shard   smallint    not null,
    bucket  smallint    not null,
    minute  timestamptz not null,
    done    int         not null default 0,  -- attempts that finished their job well
    failed  int         not null default 0,  -- attempts that left their job failed (its last)
    retried int         not null default 0,  -- attempts that failed and will be tried again
    primary key (type, slot, shard, bucket),
    constraint crontick_type_minutes_bucket_range check (bucket between 0 and 47)
);
alter table {schema}.crontick_type_minutes enable row level security;

-- No index of its own for the overview's oldest due job per type: a partial index on pending
-- jobs by type cost about 20 % more per enqueue (bench.admin_scale's tick-path figures), so the
-- types with pending jobs and their oldest due job are read from jobs_type_status_id instead,
-- bounded (sql/admin_ops.sql admin_type_pending).

-- The audit page walks admin_audit backwards by its primary key (keyset), so it needs no index
-- of its own; the failed jobs' error search walks jobs_status_id's failed range backwards
-- (sql/admin_more.sql says how it is bounded).
