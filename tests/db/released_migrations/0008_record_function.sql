-- 0008: the tick's record step as a function, whose plan each connection keeps, and the
-- attempts history without a foreign-key check per row (issue 13: the in-process drain at
-- half the plain-SQL limit; EXPLAIN ANALYZE of the record statement showed 2-2.5 ms of
-- planning and 0.7-1.1 ms of foreign-key triggers per batch of 100, against 4-6 ms of execution).

-- job_attempts rows are written only by the statements that record or rescue an attempt, for
-- rows the same statement has just updated (and so locked): the job exists, by construction.
-- The foreign key checked it again, one trigger call per attempt, on the hottest statement of
-- all. Its other duty, taking the history with the job when a job is deleted (retention, the
-- admin's delete), is done by one statement-level trigger per delete instead.
alter table job_attempts drop constraint job_attempts_job_id_fkey;

create function crontick_job_attempts_follow_jobs() returns trigger
language plpgsql as $$
begin
    if tg_op = 'TRUNCATE' then
        truncate job_attempts;
    else
        delete from job_attempts a using deleted_jobs d where a.job_id = d.id;
    end if;
    return null;
end
$$;

create trigger jobs_delete_attempts after delete on jobs
    referencing old table as deleted_jobs
    for each statement execute function crontick_job_attempts_follow_jobs();
create trigger jobs_truncate_attempts after truncate on jobs
    for each statement execute function crontick_job_attempts_follow_jobs();

-- crontick.queue.record (sql/queries.sql job_record_outcomes calls it): every outcome of a
-- batch and the tick's log row, in one statement. A function because crontick sends no
-- prepared statement (it must work through transaction poolers), so a plain statement this
-- size is planned again on every call; PL/pgSQL keeps the plan of its statement for the life
-- of the connection (a server-side cache that a pooler never sees), and force_generic_plan
-- makes it one plan from the first call on (the arguments never change its shape).
--
-- Fenced: a row changes only while it is still running the attempt this tick claimed, so a late
-- finisher whose job was rescued and re-claimed by another tick changes nothing. The counts are
-- made here from what was written, so a fenced outcome counts only as fenced. A job written
-- 'failed' raises its job_failed alert in this statement (an outbox), and every attempt that ran
-- gets its job_attempts row here too.
--
-- The outcomes arrive in two parts: succeeded attempts (most of a batch) as two arrays, ids and
-- claimed attempts, which the server reads without parsing; every other outcome as one JSON
-- array of [id, claimed_attempt, status, attempts, run_after, last_error, snoozed].
--
-- To change it: a new migration with `create or replace function`, the same signature.
create function crontick_job_record_outcomes(
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
    from outcome o, jobs claimed
    where j.id = o.id and j.status = 'running' and j.attempts = o.claimed_attempt and claimed.id = j.id
    -- `claimed` is the row as the claim left it (this statement's snapshot): its updated_at is
    -- when the attempt started.
    returning j.id, claimed.updated_at as started_at, j.type, j.status, j.attempts, j.last_error
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
    -- One row per attempt that ran; a job released unstarted made none. last_error is already scrubbed.
    insert into job_attempts (job_id, attempt, started_at, finished_at, outcome, error)
    select o.id, o.claimed_attempt, w.started_at, _now,
        case when o.status = 'done' then 'succeeded' when o.status = 'failed' then 'failed' else 'retried' end,
        left(o.last_error, 4096)
    from outcome o
    join written w on w.id = o.id
    where o.attempts >= o.claimed_attempt
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
