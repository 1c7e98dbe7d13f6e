-- Named queries of flow control's admin side (issue 20): pauses, the groups view, a group's bulk
-- end, the rate limits' state. Run by crontick.admin.flow.store (the admin's pages and JSON API)
-- and the CLI (crontick pause, resume, groups); each in the admin's short transactions.

-- name: flow_pause
-- flow_store.pause: hold back a type, a group or a rate limit (the claim reads crontick_pauses).
-- Pausing what is paused already changes nothing and says so (no row comes back).
insert into {schema}.crontick_pauses (kind, name, paused_by) values (%(kind)s, %(name)s, %(by)s)
on conflict (kind, name) do nothing
returning kind, name, paused_at, paused_by;

-- name: flow_resume
-- flow_store.resume: the held-back jobs are claimed again from the next claim on.
delete from {schema}.crontick_pauses where kind = %(kind)s and name = %(name)s
returning kind, name, paused_at, paused_by;

-- name: flow_pauses
-- flow_store.pauses: every pause, newest first (a handful of rows).
select kind, name, paused_at, paused_by from {schema}.crontick_pauses order by paused_at desc, kind, name;

-- name: flow_groups
-- flow_store.groups: groups with jobs that have not ended, in group_key order after the cursor, one
-- page; each group found by one probe of jobs_group_active (a loose index scan: a step per group,
-- never a step per job), then its head (the first unended job), how many of it run, and how many
-- wait (counted up to a cap).
with recursive g(key) as (
    (select group_key from {schema}.jobs
     where group_key > %(after)s and group_key is not null and status not in ('done', 'failed', 'cancelled')
     order by group_key limit 1)
    union all
    select (select j.group_key from {schema}.jobs j
            where j.group_key > g.key and j.group_key is not null and j.status not in ('done', 'failed', 'cancelled')
            order by j.group_key limit 1)
    from g where g.key is not null
)
select g.key as group_key, h.id as head_id, h.type as head_type, h.status as head_status, h.attempts as head_attempts,
    h.max_attempts as head_max_attempts, h.run_after as head_run_after, pg_catalog.left(h.last_error, 200) as head_error,
    h.priority as head_priority,
    (select count(*) from {schema}.jobs r where r.group_key = g.key and r.status = 'running') as running,
    (select count(*) from (select 1 from {schema}.jobs w where w.group_key = g.key and w.status = 'pending'
                           and w.held limit %(cap)s) c) as waiting,
    exists (select 1 from {schema}.crontick_pauses p where p.kind = 'group' and p.name = g.key) as group_paused,
    exists (select 1 from {schema}.crontick_pauses p where p.kind = 'type' and p.name = h.type) as type_paused,
    now() as as_of
from g
cross join lateral (
    select j.id, j.type, j.status, j.attempts, j.max_attempts, j.run_after, j.last_error, j.priority
    from {schema}.jobs j
    where j.group_key = g.key and j.status not in ('done', 'failed', 'cancelled')
    order by j.id limit 1
) h
where g.key is not null
limit %(limit)s;

-- name: flow_group_end
-- flow_store.end_group: up to a chunk of a group's pending jobs, newest first (so its head, the
-- oldest, goes last and the group is never left to run a job the operator meant to stop), become
-- cancelled or failed (their last_error says who did it). Each one's group trigger moves the head.
update {schema}.jobs j set
    status = %(status)s, locked_until = null, finished_at = now(), updated_at = now(),
    last_error = case when %(status)s = 'failed' then %(error)s else j.last_error end
where j.id = any(array(
    select id from {schema}.jobs where group_key = %(group)s and status = 'pending' order by id desc limit %(chunk)s))
  and j.status = 'pending'
returning j.id;

-- name: flow_rate_limits
-- flow_store.rate_limits: each stored limit's starts within a window of `seconds`, the first of
-- them (when the window frees a start), and its pause. The count and window come from code.
select r.name, coalesce((select pg_catalog.sum(s.n) from rows from (pg_catalog.unnest(r.starts_at), pg_catalog.unnest(r.starts_n)) s(at, n)
                         where s.at > now() - pg_catalog.make_interval(secs => w.seconds)), 0)::int as used,
    (select pg_catalog.min(s.at) from rows from (pg_catalog.unnest(r.starts_at), pg_catalog.unnest(r.starts_n)) s(at, n)
     where s.at > now() - pg_catalog.make_interval(secs => w.seconds)) + pg_catalog.make_interval(secs => w.seconds) as frees_at,
    exists (select 1 from {schema}.crontick_pauses p where p.kind = 'rate_limit' and p.name = r.name) as paused,
    r.updated_at as last_start_at, now() as as_of
from rows from (pg_catalog.unnest(%(names)s::text[]), pg_catalog.unnest(%(seconds)s::float8[])) as w(name, seconds)
join {schema}.crontick_rate_limits r on r.name = w.name
order by r.name;
