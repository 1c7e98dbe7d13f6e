-- 0004: recurring schedules. Each (schedule, slot) is enqueued at most once, ever: the slot's
-- row in crontick_schedule_slots is inserted by the same statement as its job.

-- The slot a scheduled job runs for (crontick.Job.scheduled_for) and the schedule's name.
alter table {schema}.jobs add column scheduled_for timestamptz, add column schedule text;

create table {schema}.crontick_schedules (
    name            text        primary key,
    cron            text        not null,
    time_zone       text        not null,
    catch_up        text        not null,
    job_type        text        not null,
    -- Every slot at or before this instant has been decided (enqueued or recorded as skipped).
    -- Only ever moves forward; it is read from the database's clock, never a caller's.
    evaluated_until timestamptz not null,
    -- The first slot after evaluated_until: a tick evaluates only rows with next_at <= now().
    -- '-infinity' asks the next tick to compute it; 'infinity' means no longer declared.
    next_at         timestamptz not null,
    last_slot       timestamptz,  -- the newest slot enqueued
    -- The definition before the last change of cron or time zone, and when it changed.
    previous_cron      text,
    previous_time_zone text,
    changed_at      timestamptz,
    created_at      timestamptz not null default now(),
    updated_at      timestamptz not null default now(),
    constraint crontick_schedules_catch_up_valid check (catch_up in ('latest', 'all', 'skip'))
);
create index crontick_schedules_next_at on {schema}.crontick_schedules (next_at);

-- One row per decided slot, or per run of skipped slots (slot = the first, last_slot = the last).
-- The primary key is the at-most-once guarantee: retention must not delete these rows.
create table {schema}.crontick_schedule_slots (
    schedule    text        not null,
    slot        timestamptz not null,
    outcome     text        not null,
    job_id      bigint,     -- the job enqueued for the slot (no foreign key: retention deletes jobs)
    last_slot   timestamptz not null,
    slot_count  int         not null default 1,
    -- The run was too long to walk slot by slot: slot_count is a lower bound.
    count_is_lower_bound boolean not null default false,
    recorded_at timestamptz not null default now(),
    primary key (schedule, slot),
    constraint crontick_schedule_slots_outcome_valid
        check (outcome in ('enqueued', 'coalesced', 'dropped_cap', 'skipped_late')),
    constraint crontick_schedule_slots_enqueued_has_job check ((outcome = 'enqueued') = (job_id is not null)),
    constraint crontick_schedule_slots_range check (last_slot >= slot and slot_count >= 1)
);

-- A digest of the set of schedules the code declares, written when a process syncs it: a
-- process whose digest differs syncs its own declarations on its next tick.
create table {schema}.crontick_schedule_declared (
    only_row  boolean     primary key default true,
    digest    text        not null,
    synced_at timestamptz not null,
    constraint crontick_schedule_declared_one_row check (only_row)
);
