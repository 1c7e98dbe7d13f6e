-- 0015: the columns and the table flow control reads (CONTRACT.md "Flow control"), laid down
-- once so that groups, priority, debounce and pauses (issues 20 and 23) build on one schema.
-- Adding a column with a constant default is a catalogue change in PostgreSQL 11+: no rewrite of
-- a large jobs table.

-- A job's group: jobs sharing one run one at a time, in id order (group_concurrency relaxes it).
-- Null for jobs without a group, which flow control leaves alone.
alter table {schema}.jobs add column group_key text;
alter table {schema}.jobs add constraint jobs_group_key_not_empty check (group_key <> '');

-- Smaller is claimed first; ties by run_after, then id.
alter table {schema}.jobs add column priority integer not null default 0;

-- Debounce: an enqueue whose debounce_key matches a pending job of the same type merges into it.
-- payloads holds every merged payload, oldest first (null: the job merged nothing, so its
-- payloads are [payload]); debounce_until is its first enqueue + max_seconds, past which
-- run_after never moves.
alter table {schema}.jobs add column debounce_key text;
alter table {schema}.jobs add column payloads jsonb;
alter table {schema}.jobs add column debounce_until timestamptz;
alter table {schema}.jobs add constraint jobs_payloads_is_array
    check (payloads is null or jsonb_typeof(payloads) = 'array');

-- What an operator paused (a job type, a group, a rate limit or a schedule): stored, so a pause
-- holds in every process and across deploys. Paused jobs stay pending and are not claimed.
create table {schema}.crontick_pauses (
    kind text not null,
    name text not null,
    paused_at timestamptz not null default now(),
    paused_by text,
    primary key (kind, name),
    constraint crontick_pauses_kind_valid check (kind in ('type', 'group', 'rate_limit', 'schedule')),
    constraint crontick_pauses_name_not_empty check (name <> '')
);
alter table {schema}.crontick_pauses enable row level security;
