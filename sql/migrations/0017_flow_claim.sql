-- 0017: flow control's claim side (issue 20; CONTRACT.md "Flow control"): groups, priority, rate
-- limits and pauses, enforced by the claim statement itself (sql/functions/job_claim_due.sql).
-- requires: sql/functions/job_group_follow.sql
-- requires: sql/functions/job_groups_follow.sql
-- requires: sql/functions/job_group_note.sql
-- requires: sql/functions/job_groups_deleted.sql

-- Groups. A grouped pending job is `held` while it may not start: it is not its group's head (the
-- group's first job that has not ended), or another job of its group is running. The claim reads
-- only unheld rows (the partial indexes below), so a group with 100,000 pending jobs puts one row
-- in front of the claim, not 100,000. The flag is kept by triggers (crontick_job_group_follow),
-- under a per-group lock, whatever writes the rows: an INSERT from any driver, the record
-- statement, the rescue, the admin. Jobs without a group are never held.
alter table {schema}.jobs add column held boolean not null default false;

-- Rows laid down before this migration: every grouped pending job behind an earlier unended job
-- (or beside a running one) of its group is held.
update {schema}.jobs j set held = true
where j.group_key is not null and j.status = 'pending'
  and exists (select 1 from {schema}.jobs e
              where e.group_key = j.group_key and e.id <> j.id
                and (e.id < j.id and e.status not in ('done', 'failed', 'cancelled') or e.status = 'running'));

-- The claim's order (priority, then run_after, then id) over the startable rows only.
create index jobs_pending_claim on {schema}.jobs (priority, run_after, id) where status = 'pending' and not held;
-- When the next job falls due (the probe, the record step): held rows are not due, their head is.
drop index {schema}.jobs_pending_due;
create index jobs_pending_due on {schema}.jobs (run_after, id) where status = 'pending' and not held;
-- A group's jobs that have not ended, in id order: its head is the first entry.
create index jobs_group_active on {schema}.jobs (group_key, id)
    where group_key is not null and status not in ('done', 'failed', 'cancelled');
-- A group's running jobs (whether its head may start, how many of it run).
create index jobs_group_running on {schema}.jobs (group_key) where group_key is not null and status = 'running';

create trigger jobs_group_insert before insert on {schema}.jobs
    for each row when (new.group_key is not null)
    execute function {schema}.crontick_job_group_follow();
-- A grouped job that ended, came back (an admin retry), stopped running (a retry, a rescue) or
-- changed group: the row trigger notes its group (transaction-local, see
-- crontick_job_group_note), and once per statement jobs_group_settle settles every group noted, at
-- once (a record step touches up to a batch of groups; a call per row cost a tenth of the drain).
-- Rows without a group fire nothing (the WHEN clause), and a claim (pending to running) neither:
-- its group's other jobs are held already.
create trigger jobs_group_update after update of status, group_key on {schema}.jobs
    for each row when (
        (old.group_key is not null or new.group_key is not null)
        and ((old.status in ('done', 'failed', 'cancelled')) <> (new.status in ('done', 'failed', 'cancelled'))
             or old.status = 'running' and new.status <> 'running'
             or old.group_key is distinct from new.group_key))
    execute function {schema}.crontick_job_group_note();
create trigger jobs_group_settle after update on {schema}.jobs
    for each statement
    execute function {schema}.crontick_job_groups_follow();
-- A DELETE of jobs that had not ended (an operator's, say): once per statement, its groups are
-- settled from the deleted rows (a transition table: a row trigger would settle a group once per
-- deleted job, quadratic in a big group). Retention deletes only ended jobs; it settles nothing.
create trigger jobs_group_delete after delete on {schema}.jobs
    referencing old table as old_rows
    for each statement
    execute function {schema}.crontick_job_groups_deleted();

-- Rate limits (crontick.rate_limit): each declared limit's recent starts, as pairs (when, how
-- many), the newest last; the claim locks the row, reads how many started within the window, and
-- appends its own starts, so concurrent ticks never start more than the count in any window. The
-- count and the window come from code with every claim (a changed declaration counts at once).
create table {schema}.crontick_rate_limits (
    name text primary key,
    starts_at timestamptz[] not null default '{{}}',
    starts_n int[] not null default '{{}}',
    updated_at timestamptz not null default now(),
    constraint crontick_rate_limits_name_not_empty check (name <> '')
);
alter table {schema}.crontick_rate_limits enable row level security;

-- The claim, the probe and the drain's record-and-claim take the flow-control arguments (and
-- return when a throttled limit reopens): their old signatures go; the function files create the new.
drop function if exists {schema}.crontick_job_record_and_claim(
    timestamptz, bigint[], int[], json, boolean, timestamptz, text, jsonb, jsonb, timestamptz, int, interval);
drop function if exists {schema}.crontick_tick_probe(
    timestamptz, int, interval, text, jsonb, boolean, text[], interval[], interval[], float8, boolean,
    timestamptz, timestamptz, timestamptz);
drop function if exists {schema}.crontick_job_claim_due(timestamptz, int, interval);
