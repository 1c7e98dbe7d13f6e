-- 0010: the drain's record step writes a third less (issue 13: the in-process drain at 0.5x the
-- plain-SQL loop; EXPLAIN ANALYZE put 0.5 ms of a batch's 2 ms record step in the job_attempts
-- insert, one row per succeeded attempt, and 0.1 ms in a self-join that read each row's claim time).
--
-- A job now keeps when its current attempt started (started_at, set by the claim). The attempt
-- that finishes a job successfully, most attempts by far, needs no history row of its own: the
-- done job's row says it all (attempts, started_at, finished_at), and admin_job_attempts shows
-- it as the history's last entry. Attempts that retried, failed, or ran past their lease still
-- get their row. A done job retried by hand first copies that entry into job_attempts (the
-- admin's retry statements), so its history survives the retry.
--
-- Jobs finished before this migration keep the history rows they have; admin_job_attempts adds
-- the done job's entry only where no succeeded row exists for its last attempt.

alter table jobs add column started_at timestamptz;

-- Jobs running across the upgrade: their claim set updated_at when it set the lease.
update jobs set started_at = updated_at where status = 'running';

-- The claim (sql/migrations/0009_probe_function.sql) now also sets started_at.
create or replace function crontick_job_claim_due(_now timestamptz, _limit int, _lease interval)
returns table (jobs json, leases_expired boolean, now timestamptz)
language plpgsql
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
begin
return query
with clock as (
    select coalesce(_now, now()) as now
), due as materialized (
    select id from jobs
    where status = 'pending' and run_after <= (select k.now from clock k)
    order by run_after, id
    limit _limit
    for update skip locked
), claimed as (
    update jobs j set
        status = 'running',
        attempts = j.attempts + 1,
        locked_until = k.now + _lease,
        started_at = k.now,
        updated_at = k.now
    from clock k
    where j.id = any(array(select d.id from due d))
    returning j.id, j.type, j.payload, j.attempts, j.max_attempts, j.created_at, j.scheduled_for, j.schedule, j.snoozes
)
select
    (select json_agg(json_build_array(
        c.id, c.type, c.payload::text, c.attempts, c.max_attempts, c.created_at, c.scheduled_for, c.schedule, c.snoozes)
        order by c.id)
     from claimed c),
    coalesce((select min(r.locked_until) from jobs r where r.status = 'running') < k.now, false),
    k.now
from clock k;
end
$$;

-- The record step (sql/migrations/0008_record_function.sql), without the self-join and without a
-- history row for a succeeded attempt.
create or replace function crontick_job_record_outcomes(
    _now timestamptz,
    _done_ids bigint[],
    _done_attempts int[],
    _others json,
    _log boolean,           -- write the tick's crontick_ticks row (false: outcomes only)
    _started_at timestamptz,
    _source text,
    _summary jsonb,         -- the tick's summary; its job counts are added here
    _jobs jsonb,            -- {"claimed": n, "rescued": n}
    _next_other_at timestamptz  -- when reminders or slots are next due; the jobs' own is added here
)
returns table (
    written bigint[], succeeded bigint, retried bigint, failed bigint, released bigint, fenced bigint,
    jobs_due boolean, next_job_at timestamptz, snoozed bigint, alerts_due boolean
)
language plpgsql
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
begin
if json_array_length(_others) = 0 then
    -- Every attempt succeeded, as in most batches: the same writes and counts as the statement
    -- below gives them, without its outcome table, joins and inserts that can only be empty here
    -- (a third of the statement's time for a batch of 100; tests/db/test_record_paths.py holds
    -- the two to the same rows and answers).
    return query
    with written as (
        update jobs j set
            status = 'done',
            last_error = null,
            locked_until = null,
            finished_at = _now,
            updated_at = _now
        from unnest(_done_ids, _done_attempts) as d(id, claimed_attempt)
        where j.id = d.id and j.status = 'running' and j.attempts = d.claimed_attempt
        returning j.id
    ), counts as (
        select count(*) as succeeded, 0::bigint as retried, 0::bigint as failed, 0::bigint as released,
            coalesce(cardinality(_done_ids), 0) - count(*) as fenced, 0::bigint as snoozed
        from written
    ), next_job as (
        select (select min(run_after) from jobs where status = 'pending') as at
    ), logged as (
        insert into crontick_ticks (started_at, finished_at, source, summary)
        select _started_at, _now, _source,
            _summary || jsonb_build_object('jobs', _jobs || to_jsonb(c), 'next_due_at', least(n.at, _next_other_at))
        from counts c, next_job n
        where _log
    )
    select array(select w.id from written w),
        c.succeeded, c.retried, c.failed, c.released, c.fenced,
        coalesce(n.at <= _now, false),
        n.at,
        c.snoozed,
        coalesce((select min(next_attempt_at) from crontick_alerts where status = 'pending') <= _now, false)
    from counts c, next_job n;
    return;
end if;
return query
with outcome as materialized (
    select d.id, d.claimed_attempt, 'done'::text as status, d.claimed_attempt as attempts,
        null::timestamptz as run_after, null::text as last_error, false as snoozed
    from unnest(_done_ids, _done_attempts) as d(id, claimed_attempt)
    union all
    select (o ->> 0)::bigint, (o ->> 1)::int, o ->> 2, (o ->> 3)::int, (o ->> 4)::timestamptz, o ->> 5,
        coalesce((o ->> 6)::boolean, false)
    from json_array_elements(_others) o
), written as (
    update jobs j set
        status = o.status,
        attempts = o.attempts,
        run_after = coalesce(o.run_after, j.run_after),
        -- A released job (never started: attempts handed back) keeps its previous attempt's error.
        last_error = case when o.attempts < o.claimed_attempt then j.last_error else o.last_error end,
        locked_until = null,
        finished_at = case when o.status in ('done', 'failed') then _now end,
        -- crontick.Snooze: the attempt was handed back (attempts above); count the snooze, which is bounded.
        snoozes = j.snoozes + case when o.snoozed then 1 else 0 end,
        updated_at = _now
    from outcome o
    where j.id = o.id and j.status = 'running' and j.attempts = o.claimed_attempt
    -- started_at is the claim's, which this update leaves as it was.
    returning j.id, j.started_at, j.type, j.status, j.attempts, j.last_error
), job_alerts as (
    insert into crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'job_failed', 'job:' || w.id, _now,
        jsonb_build_object('job_id', w.id, 'job_type', w.type, 'attempts', w.attempts, 'error', left(w.last_error, 500)),
        _now, _now, _now
    from written w
    where w.status = 'failed'
    on conflict on constraint crontick_alerts_once do nothing
    returning 1
), attempt_log as (
    -- One row per attempt that ran and did not finish the job well: the attempt that succeeded
    -- is the done job's own row (started_at, finished_at, attempts; see admin_job_attempts). A
    -- job released unstarted made none. last_error is already scrubbed.
    insert into job_attempts (job_id, attempt, started_at, finished_at, outcome, error)
    select o.id, o.claimed_attempt, w.started_at, _now,
        case when o.status = 'failed' then 'failed' else 'retried' end,
        left(o.last_error, 4096)
    from outcome o
    join written w on w.id = o.id
    where o.attempts >= o.claimed_attempt and o.status <> 'done'
), counts as (
    select
        count(*) filter (where w.id is not null and o.status = 'done') as succeeded,
        count(*) filter (where w.id is not null and o.status = 'pending' and o.attempts >= o.claimed_attempt) as retried,
        count(*) filter (where w.id is not null and o.status = 'failed') as failed,
        count(*) filter (where w.id is not null and o.status = 'pending' and o.attempts < o.claimed_attempt
                         and not o.snoozed) as released,
        count(*) filter (where w.id is null) as fenced,
        count(*) filter (where w.id is not null and o.snoozed) as snoozed
    from outcome o
    left join written w on w.id = o.id
), next_job as (
    -- For the summary's next_due_at: the snapshot does not see this statement's own writes,
    -- so the batch's retries (and releases, due now) are counted from the outcomes.
    select least(
        (select min(run_after) from jobs where status = 'pending'),
        (select min(coalesce(o.run_after, _now)) from outcome o where o.status = 'pending')
    ) as at
), logged as (
    insert into crontick_ticks (started_at, finished_at, source, summary)
    select _started_at, _now, _source,
        _summary || jsonb_build_object('jobs', _jobs || to_jsonb(c), 'next_due_at', least(n.at, _next_other_at))
    from counts c, next_job n
    where _log
)
select array(select w.id from written w),
    c.succeeded, c.retried, c.failed, c.released, c.fenced,
    -- Whether the caller has more to do: pending jobs due now (the first entry of a partial index).
    coalesce((select min(run_after) from jobs where status = 'pending') <= _now, false),
    (select n.at from next_job n),
    c.snoozed,
    -- crontick.alerts: whether to send now, from what this statement wrote or the first entry of
    -- a partial index, so a tick with nothing pending spends no statement on alerts.
    exists (select 1 from job_alerts)
        or coalesce((select min(next_attempt_at) from crontick_alerts where status = 'pending') <= _now, false)
from counts c;
end
$$;

-- crontick.queue.record with claim_next (crontick tick --drain): record one batch's outcomes and
-- the tick's log row, then claim the next batch, in one round trip and one transaction (one
-- commit, not two). The record goes first, so the claim sees what it released. Should the
-- statement fail, neither happened: the outcomes are recorded again by no one, and the claimed
-- batch's jobs are rescued when their lease ends, as after a crash (at least once).
create function crontick_job_record_and_claim(
    _now timestamptz,
    _done_ids bigint[],
    _done_attempts int[],
    _others json,
    _log boolean,
    _started_at timestamptz,
    _source text,
    _summary jsonb,
    _jobs jsonb,
    _next_other_at timestamptz,
    _limit int,                 -- the next batch: the most jobs to claim, and their lease
    _lease interval
)
returns table (
    written bigint[], succeeded bigint, retried bigint, failed bigint, released bigint, fenced bigint,
    jobs_due boolean, next_job_at timestamptz, snoozed bigint, alerts_due boolean,
    next_jobs json, leases_expired boolean, next_now timestamptz
)
language plpgsql
as $$
declare
    r record;
begin
    select * into r from crontick_job_record_outcomes(
        _now, _done_ids, _done_attempts, _others, _log, _started_at, _source, _summary, _jobs, _next_other_at);
    return query
    select r.written, r.succeeded, r.retried, r.failed, r.released, r.fenced, r.jobs_due, r.next_job_at,
        r.snoozed, r.alerts_due, c.jobs, c.leases_expired, c.now
    from crontick_job_claim_due(null, _limit, _lease) c;
end
$$;
