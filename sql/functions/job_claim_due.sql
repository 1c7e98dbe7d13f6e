-- crontick_job_claim_due: claim up to a batch of due jobs and lease them, and say whether some
-- running job's lease has passed (then the tick rescues and claims again). Called by
-- sql/queries.sql job_claim_due (crontick.tick.claim.claim_batch: a drain's batches after the
-- first, and the claim after a rescue), by crontick_tick_probe (the tick's first statement) and
-- by crontick_job_record_and_claim (a drain's record step that claims the next batch). One claim
-- for every caller, so they cannot claim differently (tests/perf/test_claim_statements.py checks
-- the probe and job_claim_due both call it).
-- A function because crontick sends no prepared statement (it must work through transaction
-- poolers): PL/pgSQL keeps the plan of its statement for the life of the server connection (a
-- cache a pooler never sees), and force_generic_plan makes it one plan from the first call on.
-- The tick's time: the caller's (tests fake time by passing it), else the DATABASE's clock,
-- never the app host's, so hosts whose clocks disagree claim, lease and rescue alike; it is
-- returned, and the rest of the tick counts from it (crontick.tick.pipeline.work).
-- The CTE is MATERIALIZED so the planner cannot inline it into the UPDATE and re-evaluate the
-- LIMIT / SKIP LOCKED per row; the lock is taken exactly once per chosen row.
-- `id = any(array(...))` makes the UPDATE find its rows by primary key whatever the table
-- statistics say (a join may be planned as a scan of the whole table).
-- Whether a lease has passed is `exists (... locked_until < now)`, not `min(locked_until) < now`: the
-- scan of jobs_running_lease then stops at its first entry past now, where min() visited the heap
-- for every entry before the first live row (this batch's new rows, which this statement cannot
-- see, and the last batches' rows that have ended since): about 0.2 M instructions a claim of 100
-- (bench.instructions; docs/benchmarks.md, "A lease check that stops at the first entry").
-- started_at (sql/migrations/0010_attempt_in_job_row.sql) is when the attempt started: the record
-- step writes it into the attempts history, and a done job's row keeps it.
-- The batch comes back as one JSON array of [id, type, payload, attempts, max_attempts,
-- created_at, scheduled_for, schedule, snoozes, payloads, traceparent] (crontick.tick.claim.CLAIMED_COLUMNS,
-- which tests/tick/test_claim_rows.py holds both bodies to): one value to decode instead of ten per job.
-- traceparent (migration 0031: the enqueuer's W3C trace context, null unless the enqueuing app traced) comes
-- with the job so that its span links to its enqueuer without a statement of its own (crontick.jobs.job_spans).
-- Two bodies, the plain claim and the one with flow control (below): the parts marked
-- "twin begin <name>" ... "twin end <name>" are the same text in both, and
-- tests/unit/test_function_twins.py holds them so: edit one, edit the other.
-- Each payload travels as JSON text, decoded job by job: one payload too deep for Python's json
-- module (jsonb accepts thousands of levels) then fails only its own job, not the batch.
-- Priorities one at a time: the due jobs are read priority by priority, smallest first
-- (sql/functions/job_pending_priorities.sql: one probe of jobs_pending_claim per priority), each
-- with `priority = p and run_after <= now`, so the scan of (priority, run_after, id) stops at the
-- first entry past now. One scan ordered by all three columns with a bound on run_after alone
-- cannot stop there before PostgreSQL 18 (no skip scan): it read every later entry of the smaller
-- priorities first, the whole index on an idle tick with jobs scheduled for later (496 pages for
-- 100,000 of them; tests/flow/test_priority_pause_claim.py). The rows come out in the order the
-- claim takes them (the nested loop keeps the levels' order, each level its index order), and
-- `limit` stops pulling, and locking, once the batch is full; the batch is returned in id order.
-- Flow control (CONTRACT.md "Flow control"; sql/migrations/0017_flow_claim.sql): the claim takes
-- due jobs by priority, then run_after, then id, reading only rows that may start (jobs_pending_claim:
-- a group's jobs behind its head are `held`, kept so by sql/functions/job_group_follow.sql). `_flow`
-- is what the claim needs from the code (crontick.flow.claim_args): each declared rate limit with
-- its count, window and the types that name it, and each type whose group_concurrency is above 1
-- (`wide`: such groups may start their next jobs while one runs). Rows of crontick_pauses hold back a paused type,
-- group or limit. With neither, the claim is the plain statement of before. A limit's row is locked
-- (so concurrent claims count one after another), its starts within the window read, at most what
-- is left claimed, and this claim's starts appended: jobs over the limit stay pending, unlocked
-- after this statement, untouched. `throttled_until`: when the first exhausted limit with due jobs
-- reopens (the tick's next_due_at).
-- start_by (sql/migrations/0041_start_by.sql): in the same statement, every pending job past its start_by whose
-- handler never ran ends `cancelled` (the `expire` part, the same in both bodies), and the claim skips it: an
-- expired job costs no statement of its own and never starts. Read from jobs_start_by, empty while no job
-- carries a start_by. `expired`: how many it ended so (the tick's jobs.expired; migration 0049 added the column),
-- counted from `expire`, whose every row the update ends.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_claim_due(_now timestamptz, _limit int, _lease interval, _flow jsonb default null)
returns table (jobs json, leases_expired boolean, now timestamptz, throttled_until timestamptz, expired int)
language plpgsql
set plan_cache_mode = force_generic_plan
-- The flow path's scan filters rows (paused and throttled types, paused groups) by values the
-- generic plan cannot estimate; without this the planner may read every due row and sort them,
-- where the ordered index (jobs_pending_claim) stops at the batch. No other plan here has a sort
-- to avoid (bench.explain shows the plan). The costs that setting adds must not start the JIT
-- compiler (seconds, for a statement that runs in a millisecond).
set enable_sort = off
set jit = off
as $$
#variable_conflict use_column
begin
if _flow is null and not exists (select 1 from {schema}.crontick_pauses where kind in ('type', 'group', 'rate_limit')) then
return query
with clock as (
    select coalesce(_now, now()) as now
    -- twin begin expire
), expire as materialized (
    -- start_by: the pending jobs past it whose handler never ran (never claimed; or claimed and handed back
    -- unstarted: no attempt spent, no snooze, no step recorded), all of them, so that none is left for the
    -- claim below to start (it skips these ids). Skip locked, as the claim: one locked elsewhere waits.
    select e.id from {schema}.jobs e
    where e.start_by is not null and e.status = 'pending' and e.start_by <= (select k.now from clock k)
      and (e.started_at is null
           or e.attempts = 0 and e.snoozes = 0 and not exists (select 1 from {schema}.job_steps s where s.job_id = e.id))
    for update skip locked
), expired as (
    -- Ended `cancelled`, no attempt spent; the record statement raises alerts only for what it writes `failed`.
    update {schema}.jobs j set
        status = 'cancelled',
        locked_until = null,
        finished_at = k.now,
        updated_at = k.now,
        last_error = 'expired: not started by its start_by (' || to_char(j.start_by at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
            || '), so never run'
    from clock k
    where j.id = any(array(select e.id from expire e))
    -- twin end expire
), due as materialized (
    select d.id from {schema}.crontick_job_pending_priorities() as l(priority)
    cross join lateral (
        select j.id from {schema}.jobs j
        where j.status = 'pending' and not j.held and j.priority = l.priority and j.run_after <= (select k.now from clock k)
          and j.id <> all(array(select e.id from expire e))
        order by j.run_after, j.id
        limit _limit
        for update skip locked
    ) d
    limit _limit
), claimed as (
    -- twin begin lease
    update {schema}.jobs j set
        status = 'running',
        attempts = j.attempts + 1,
        locked_until = k.now + _lease,
        started_at = k.now,
        updated_at = k.now
    from clock k
    -- twin end lease
    where j.id = any(array(select d.id from due d))
    -- twin begin returning
    returning j.id, j.type, j.payload, j.attempts, j.max_attempts, j.created_at, j.scheduled_for, j.schedule, j.snoozes, j.payloads, j.traceparent
    -- twin end returning
)
-- twin begin answer
select
    (select json_agg(json_build_array(
        c.id, c.type, c.payload::text, c.attempts, c.max_attempts, c.created_at, c.scheduled_for, c.schedule, c.snoozes, c.payloads::text,
        c.traceparent)
        order by c.id)
     from claimed c),
    exists (select 1 from {schema}.jobs r where r.status = 'running' and r.locked_until < k.now),
    k.now,
-- twin end answer
    null::timestamptz,
    (select pg_catalog.count(*) from expire x)::int  -- each one `expired` ended
from clock k;
return;
end if;
-- A limit seen for the first time gets its row, which the claim below locks (this statement's
-- snapshot is older than the next one's).
-- A limit's row is made by the first claim that names it. Under a try-lock per name: a claim never
-- waits for another's uncommitted insert of the same row (that one's transaction may stay open: a
-- claim skips what it cannot take, it never waits), it counts the limit as full this once instead.
insert into {schema}.crontick_rate_limits (name)
select l.name from jsonb_to_recordset(coalesce(_flow -> 'limits', '[]')) as l(name text)
where not exists (select 1 from {schema}.crontick_rate_limits r where r.name = l.name)
  and pg_try_advisory_xact_lock(1668444015, hashtext(l.name))
on conflict do nothing;
return query
with clock as (
    select coalesce(_now, now()) as now
    -- twin begin expire
), expire as materialized (
    -- start_by: the pending jobs past it whose handler never ran (never claimed; or claimed and handed back
    -- unstarted: no attempt spent, no snooze, no step recorded), all of them, so that none is left for the
    -- claim below to start (it skips these ids). Skip locked, as the claim: one locked elsewhere waits.
    select e.id from {schema}.jobs e
    where e.start_by is not null and e.status = 'pending' and e.start_by <= (select k.now from clock k)
      and (e.started_at is null
           or e.attempts = 0 and e.snoozes = 0 and not exists (select 1 from {schema}.job_steps s where s.job_id = e.id))
    for update skip locked
), expired as (
    -- Ended `cancelled`, no attempt spent; the record statement raises alerts only for what it writes `failed`.
    update {schema}.jobs j set
        status = 'cancelled',
        locked_until = null,
        finished_at = k.now,
        updated_at = k.now,
        last_error = 'expired: not started by its start_by (' || to_char(j.start_by at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
            || '), so never run'
    from clock k
    where j.id = any(array(select e.id from expire e))
    -- twin end expire
), paused as materialized (
    select p.kind, p.name from {schema}.crontick_pauses p where p.kind in ('type', 'group', 'rate_limit')
), decl as (
    select l.name, l.count, make_interval(secs => l.seconds) as width, l.types
    from jsonb_to_recordset(coalesce(_flow -> 'limits', '[]')) as l(name text, count int, seconds float8, types text[])
), lim as materialized (
    select r.name, r.starts_at, r.starts_n from {schema}.crontick_rate_limits r
    where r.name in (select d.name from decl d)
    order by r.name
    -- skip locked: a limit another claim is counting right now is full for this claim (its jobs
    -- wait for the next), so claims never queue behind each other, as for the jobs themselves.
    for update skip locked
), room as materialized (
    select d.name, d.types, d.width, l.starts_at, l.starts_n,
        case when l.name is null or d.name in (select p.name from paused p where p.kind = 'rate_limit') then 0
             else greatest(0, d.count - coalesce((select sum(s.n) from unnest(l.starts_at, l.starts_n) s(at, n)
                                                  where s.at > k.now - d.width), 0)) end as free,
        coalesce((select min(s.at) from unnest(l.starts_at, l.starts_n) s(at, n) where s.at > k.now - d.width), k.now)
            + d.width as reopens
    from decl d left join lim l on l.name = d.name, clock k
), cand as materialized (
    select c.* from {schema}.crontick_job_pending_priorities() as l(priority)
    cross join lateral (
        select j.id, j.type, j.priority, j.run_after, j.group_key from {schema}.jobs j
        where j.status = 'pending' and not j.held and j.priority = l.priority and j.run_after <= (select k.now from clock k)
          and j.id <> all(array(select e.id from expire e))
          and j.type <> all(array(select unnest(r.types) from room r where r.free = 0
                                  union all select p.name from paused p where p.kind = 'type'))
          and (j.group_key is null or j.group_key <> all(array(select p.name from paused p where p.kind = 'group')))
        order by j.run_after, j.id
        limit _limit  -- the same bound as the plain claim
        for update skip locked
    ) c
    limit _limit
), wide as (
    select w.type, w.n from jsonb_to_recordset(coalesce(_flow -> 'wide', '[]')) as w(type text, n int)
), running as materialized (
    -- Each group's running jobs (a few: at most what the ticks running now claimed), for side.
    select r.group_key, count(*) as n from {schema}.jobs r
    where r.status = 'running' and r.group_key is not null and exists (select 1 from wide)
    group by r.group_key
), side as materialized (
    -- group_concurrency > 1: in each group running a job of such a type, or whose head of such a
    -- type this claim takes (so a group with nothing running starts n at once, not its head first
    -- and the rest a claim later), its first n unended jobs (n the largest such limit), ranked; one
    -- of them may start when its rank is within its own type's limit. Held rows, so never in cand.
    -- A pending job's rank is how many of the group would be running once it and the pending ones
    -- ahead of it start: its place among the group's pending jobs plus every job of the group
    -- running now. Counting all of those, not only the ones ahead of it, keeps the limit when a job
    -- runs behind a pending one (an admin retried a failed job that its group had moved past).
    -- `clear`: no pending job of a limit-1 type is ahead of it. Such a job is a barrier: the wide
    -- jobs after it wait until it has run, so that they never start ahead of it, one after another,
    -- while it stays held by whichever of them runs (starved as long as they keep coming).
    select f.id, f.rank + coalesce((select r.n from running r where r.group_key = g.group_key), 0) as rank, f.clear
    from (select r.group_key from {schema}.jobs r
          where r.status = 'running' and r.group_key is not null and r.type in (select w.type from wide w)
          union
          select c.group_key from cand c where c.group_key is not null and c.type in (select w.type from wide w)) g
    cross join lateral (
        select e.id, row_number() over (order by e.id) - count(*) filter (where e.status = 'running') over (order by e.id)
            as rank,
            coalesce(bool_and(e.status <> 'pending' or e.type in (select w.type from wide w))
                     over (order by e.id rows between unbounded preceding and 1 preceding), true) as clear
            from {schema}.jobs e
        where e.group_key = g.group_key and e.status not in ('done', 'failed', 'cancelled')
        order by e.id limit (select max(w.n) from wide w)) f
), wcand as materialized (
    select j.id, j.type, j.priority, j.run_after, j.group_key from {schema}.jobs j
    join side s on s.id = j.id
    join wide w on w.type = j.type
    where j.status = 'pending' and j.held and s.rank <= w.n and s.clear and j.run_after <= (select k.now from clock k)
      and j.id <> all(array(select e.id from expire e))
      and j.type <> all(array(select unnest(r.types) from room r where r.free = 0
                              union all select p.name from paused p where p.kind = 'type'))
      and j.group_key <> all(array(select p.name from paused p where p.kind = 'group'))
    order by j.priority, j.run_after, j.id
    limit _limit  -- the batch again: with cand, at most twice the batch is locked, the batch taken
    for update of j skip locked
), ranked as materialized (
    select c.id, r.name, r.free, row_number() over (partition by r.name order by c.priority, c.run_after, c.id) as n
    from (select * from cand union all select * from wcand order by 3, 4, 1 limit _limit) c
    left join room r on c.type = any(r.types)
), claimed as (
    -- twin begin lease
    update {schema}.jobs j set
        status = 'running',
        attempts = j.attempts + 1,
        locked_until = k.now + _lease,
        started_at = k.now,
        updated_at = k.now
    from clock k
    -- twin end lease
    where j.id = any(array(select d.id from ranked d where d.name is null or d.n <= d.free))
    -- twin begin returning
    returning j.id, j.type, j.payload, j.attempts, j.max_attempts, j.created_at, j.scheduled_for, j.schedule, j.snoozes, j.payloads, j.traceparent
    -- twin end returning
), used as (
    select d.name, count(*) filter (where d.n <= d.free) as k, count(*) filter (where d.n > d.free) as over
    from ranked d where d.name is not null group by d.name
), logged as (
    update {schema}.crontick_rate_limits t set
        starts_at = array(select s.at from unnest(r.starts_at, r.starts_n) s(at, n) where s.at > k.now - r.width) || k.now,
        starts_n = array(select s.n from unnest(r.starts_at, r.starts_n) s(at, n) where s.at > k.now - r.width) || u.k::int,
        updated_at = k.now
    from used u join room r on r.name = u.name, clock k
    where t.name = u.name and u.k > 0
)
-- twin begin answer
select
    (select json_agg(json_build_array(
        c.id, c.type, c.payload::text, c.attempts, c.max_attempts, c.created_at, c.scheduled_for, c.schedule, c.snoozes, c.payloads::text,
        c.traceparent)
        order by c.id)
     from claimed c),
    exists (select 1 from {schema}.jobs r where r.status = 'running' and r.locked_until < k.now),
    k.now,
-- twin end answer
    (select min(case when u.k > 0 then least(r.reopens, k.now + r.width) else r.reopens end) from room r
     left join used u on u.name = r.name
     where coalesce(u.over, 0) > 0
        or r.free = 0 and r.name not in (select p.name from paused p where p.kind = 'rate_limit')
           -- pending jobs of its types, due or not: the first entry of jobs_pending_type_id, or of
           -- jobs_type_status_id's held rows (each predicate word for word, migration 0023)
           and (exists (select 1 from {schema}.jobs j
                        where j.type = any(r.types) and j.status = 'pending' and not j.held)
                or exists (select 1 from {schema}.jobs j
                           where j.type = any(r.types) and j.status = 'pending' and j.held
                             and j.status <> 'running' and (j.status <> 'pending' or j.held)))),
    (select pg_catalog.count(*) from expire x)::int  -- each one `expired` ended
from clock k;
end
$$;
