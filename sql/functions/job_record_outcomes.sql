-- crontick_job_record_outcomes: every outcome of a batch and the tick's log row, in one
-- statement. Called by sql/queries.sql job_record_outcomes (crontick.tick.record.record_batch: the
-- tick's last step; crontick.tick.record.record_outcomes runs it without the log row) and by
-- crontick_job_record_and_claim (the drain).
-- A function because crontick sends no prepared statement (it must work through transaction
-- poolers), so a plain statement this size is planned again on every call (issue 13: 2-2.5 ms of
-- planning per batch of 100, against 4-6 ms of execution); PL/pgSQL keeps the plan of its
-- statement for the life of the connection (a server-side cache that a pooler never sees), and
-- force_generic_plan makes it one plan from the first call on (the arguments never change its
-- shape).
--
-- Fenced: a row changes only while it is still running the attempt this tick claimed, so a late
-- finisher whose job was rescued and re-claimed by another tick changes nothing. The fence's
-- `status = 'running'` is written `(status = 'running') is true` (the same test: status is never
-- null): given the plain clause, the generic plan may read every running row through
-- jobs_running_lease (whose predicate it matches, and whose size the statistics put at a row) and
-- probe the batch's outcomes once per row, 100 x 100 for a batch; no index predicate matches the
-- boolean test, so each row is found by primary key. The counts are
-- made here from what was written, so a fenced outcome counts only as fenced. A job written
-- 'failed' raises its job_failed alert in this statement (an outbox), and every attempt that ran
-- and did not finish its job well gets its job_attempts row here too: the attempt that succeeded
-- is the done job's own row (attempts, started_at, finished_at; sql/admin.sql admin_job_attempts
-- shows it), which keeps a third of the writes off the drain's record step
-- (sql/migrations/0010_attempt_in_job_row.sql).
--
-- The outcomes arrive in two parts: succeeded attempts (most of a batch) as two arrays, ids and
-- claimed attempts, which the server reads without parsing; every other outcome as one JSON
-- array of [id, claimed_attempt, status, attempts, run_after, last_error, snoozed, traceback, park, yielded, slow, ms]
-- (crontick.jobs.job.Outcome's fields, in order; an older caller's shorter array reads as no park, no yield, not
-- slow, no run time). Each attempt's run time (ms) goes to the per-type duration ring: the succeeded ones' as
-- _done_ms, beside _done_ids; the others' as their row's last element. A slow attempt (CRONTICK_SLOW_JOB_SECONDS) always comes in that array, never as a succeeded id. A batch whose
-- attempts all succeeded takes a shorter statement (tests/db/test_record_paths.py holds the two
-- to the same rows and answers). The parts of the two statements marked "twin begin <name>" ...
-- "twin end <name>" are the same text, and tests/unit/test_function_twins.py holds them so: edit
-- one, edit the other.
-- Durable steps (issue 21, crontick.workflows; the parts marked "steps:" below): an outcome may
-- carry a ninth element, park ([name, kind, event_key, step status, result, wait_until, since]; since
-- is read by crontick_job_begin_waits only), for a
-- job.sleep (pending, due later) or a job.wait_for (waiting until its deadline, run_after) that
-- parked the job: its step row is written here, fenced like the outcome, and the attempt is handed
-- back without counting a snooze. Every record statement also wakes waits whose deadline passed
-- (back to pending, due now; their wait step timed_out), a bounded batch at a time, so that no
-- other statement is needed for timeouts: the probe counts a waiting job's deadline in
-- next_job_at, so the tick after a deadline is never idle and ends here.
-- `and not held`: a group's jobs behind its head are not due (sql/migrations/0017_flow_claim.sql).
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_record_outcomes(
    _now timestamptz,
    _done_ids bigint[],
    _done_attempts int[],
    _others json,
    _log boolean,           -- write the tick's crontick_ticks row (false: outcomes only)
    _started_at timestamptz,
    _source text,
    _summary jsonb,         -- the tick's summary; its job counts are added here
    _jobs jsonb,            -- the claimed and rescued counts, as a JSON object
    _next_other_at timestamptz, -- when reminders or slots are next due; the jobs' own is added here
    -- How long each succeeded attempt of _done_ids ran (ms, its handler's own time; migration 0047). Last and
    -- defaulted: a previous release's call without it still means what it meant, its durations then counted
    -- from the claim to this statement, as before.
    _done_ms double precision[] default null
)
returns table (
    written bigint[], succeeded bigint, retried bigint, failed bigint, released bigint, fenced bigint,
    jobs_due boolean, next_job_at timestamptz, snoozed bigint, alerts_due boolean
)
language plpgsql
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
declare
    _r record;
    _group_at timestamptz;  -- when the next job of a group this statement moved on comes due
begin
-- flow: the statement's grouped rows are not noted by the row trigger (jobs_group_update,
-- sql/migrations/0022_record_settles_groups.sql); their groups are settled after it, at the end.
perform set_config('crontick.group_settle', 'record', true);
if json_array_length(_others) = 0 then
    -- Every attempt succeeded, as in most batches: the same writes and counts as the statement
    -- below gives them, without its outcome table, joins and inserts that can only be empty here
    -- (a third of the statement's time for a batch of 100; tests/db/test_record_paths.py holds
    -- the two to the same rows and answers).
    with written as (
        update {schema}.jobs j set
            status = 'done',
            last_error = null,
            locked_until = null,
            finished_at = _now,
            updated_at = _now
        from unnest(_done_ids, _done_attempts, _done_ms) as d(id, claimed_attempt, ms)
        -- `is true`: each row by primary key (see the fence's note above).
        where j.id = d.id and (j.status = 'running') is true and j.attempts = d.claimed_attempt
        returning j.id, j.type, j.started_at, d.ms, j.group_key  -- type, started_at, ms: type_rollup (issue 23); group_key: flow
    ), woken as (
        -- steps: waits past their deadline go back to pending (as in the statement below).
        -- twin begin wake_waits
        update {schema}.jobs j set status = 'pending', run_after = _now, updated_at = _now
        where j.id = any(array(
            select id from {schema}.jobs where status = 'waiting' and run_after <= _now
            order by run_after, id limit 1000 for update skip locked))
        returning j.id, j.group_key
    ), timed_out as (
        update {schema}.job_steps s set status = 'timed_out', finished_at = _now
        from woken w where s.job_id = w.id and s.status = 'waiting'
        -- twin end wake_waits
    ), type_rollup as (
        -- Issue 23, the admin's per-type figures (crontick.admin.figures; the ring table is
        -- migration 0020's): as type_rollup in the statement below, every attempt done here.
        -- Each attempt's bucket is its own run time (ms); counted per (type, started_at, ms) first.
        -- twin begin type_rollup_head
        insert into {schema}.crontick_type_minutes as m (type, slot, shard, bucket, minute, done, failed, retried, slow)
        select w.type, (floor(extract(epoch from _now) / 60)::bigint % 1500)::smallint, (pg_backend_pid() % 4)::smallint,
            least(floor(2 * ln(greatest(coalesce(w.ms, extract(epoch from _now - coalesce(w.started_at, _now)) * 1000), 1)) / ln(2)), 47)::smallint,
        -- twin end type_rollup_head
            date_trunc('minute', _now), sum(w.n), 0, 0, 0
        from (select w.type, w.started_at, w.ms, count(*) as n from written w group by 1, 2, 3) w
        -- twin begin type_rollup_tail
        group by 1, 2, 3, 4, 5
        order by 1, 4
        on conflict (type, slot, shard, bucket) do update set
        -- twin end type_rollup_tail
            done = case when m.minute = excluded.minute then m.done + excluded.done else excluded.done end,
            failed = case when m.minute = excluded.minute then m.failed else 0 end,
            retried = case when m.minute = excluded.minute then m.retried else 0 end,
            slow = case when m.minute = excluded.minute then m.slow else 0 end,
            minute = excluded.minute
    ), counts as (
        select count(*) as succeeded, 0::bigint as retried, 0::bigint as failed, 0::bigint as released,
            coalesce(cardinality(_done_ids), 0) - count(*) as fenced, 0::bigint as snoozed, 0::bigint as yielded
        from written
    ), next_job as (
        -- steps: a waiting job's deadline counts too. flow: the groups this statement moved on are
        -- read once the settle after it has unheld their next jobs (at the end).
        select least({schema}.crontick_job_next_at(),
                     (select min(run_after) from {schema}.jobs where status = 'waiting')) as at
    -- twin begin log_and_answer
    )
    select array(select w.id from written w) as written,
        c.succeeded, c.retried, c.failed, c.released, c.fenced, to_jsonb(c) as counts,
    -- twin end log_and_answer
        -- Pending jobs or waits due (next_job); with a type or group paused, its due jobs do not count
        -- (as in the statement below). A group moved on is looked at after the settle (at the end).
        case when not exists (select 1 from {schema}.crontick_pauses p where p.kind in ('type', 'group'))
            then coalesce(n.at <= _now, false)
            else {schema}.crontick_job_due_unpaused(_now)
                or coalesce((select min(run_after) from {schema}.jobs where status = 'waiting') <= _now, false)
        end or exists (select 1 from woken) as jobs_due,
        n.at as next_job_at,
        c.snoozed,
        coalesce((select min(next_attempt_at) from {schema}.crontick_alerts where status = 'pending') <= _now, false) as alerts_due,
        -- flow: the groups this statement changed, and its grouped rows left pending (woken waits),
        -- which are settled once it has run (at the end).
        -- twin begin groups
        array(select w.group_key from written w where w.group_key is not null
              union select k.group_key from woken k where k.group_key is not null) as groups,
        -- twin end groups
        array(select k.id from woken k where k.group_key is not null) as pending
    into _r
    from counts c, next_job n;
else
-- steps: a wait beginning takes its key's lock and any signal kept for it (crontick_job_begin_waits).
if exists (select 1 from json_array_elements(_others) o where o -> 8 ->> 1 = 'wait') then
    _others := {schema}.crontick_job_begin_waits(_now, _others);
end if;
with outcome as materialized (
    select d.id, d.claimed_attempt, 'done'::text as status, d.claimed_attempt as attempts,
        null::timestamptz as run_after, null::text as last_error, false as snoozed, null::text as traceback,
        null::json as park, false as yielded, false as slow, d.ms
    from unnest(_done_ids, _done_attempts, _done_ms) as d(id, claimed_attempt, ms)
    union all
    select (o ->> 0)::bigint, (o ->> 1)::int, o ->> 2, (o ->> 3)::int, (o ->> 4)::timestamptz, o ->> 5,
        coalesce((o ->> 6)::boolean, false), o ->> 7,
        case when json_typeof(o -> 8) = 'array' then o -> 8 end,  -- steps: park (JSON null: none)
        coalesce((o ->> 9)::boolean, false),  -- a yield (crontick.jobs.decision.yields); absent from older callers
        coalesce((o ->> 10)::boolean, false),  -- slow (crontick.jobs.runner, CRONTICK_SLOW_JOB_SECONDS); the same
        (o ->> 11)::double precision  -- ms, the attempt's run time (migration 0047); null from older callers
    from json_array_elements(_others) o
), written as (
    update {schema}.jobs j set
        status = o.status,
        attempts = o.attempts,
        run_after = coalesce(o.run_after, j.run_after),
        -- A released job (never started: attempts handed back) keeps its previous attempt's error; one
        -- put back with a reason of its own (a type this process does not know) says why.
        last_error = case when o.attempts < o.claimed_attempt and o.last_error is null then j.last_error
                          else o.last_error end,
        locked_until = null,
        finished_at = case when o.status in ('done', 'failed') then _now end,
        -- crontick.Snooze: the attempt was handed back (attempts above); count the snooze, which is bounded.
        -- steps: a parked job (job.sleep, job.wait_for) hands its attempt back too, but snoozed nothing.
        snoozes = j.snoozes + case when o.snoozed and o.park is null then 1 else 0 end,
        updated_at = _now
    from outcome o
    where j.id = o.id and (j.status = 'running') is true and j.attempts = o.claimed_attempt  -- by primary key (above)
    -- started_at is the claim's, which this update leaves as it was.
    returning j.id, j.started_at, j.type, j.status, j.attempts, j.last_error, j.group_key, o.ms
), parked as (
    -- steps: the sleep or wait that parked a job, recorded as its step (fenced: only written jobs).
    insert into {schema}.job_steps (job_id, name, kind, status, attempt, result, event_key, wait_until, created_at, finished_at)
    select o.id, o.park ->> 0, o.park ->> 1, o.park ->> 3, o.claimed_attempt, (o.park -> 4)::text::jsonb,
        o.park ->> 2, (o.park ->> 5)::timestamptz, _now, case when o.park ->> 3 <> 'waiting' then _now end
    from outcome o
    join written w on w.id = o.id
    where o.park is not null
    on conflict (job_id, name) do nothing
), woken as (
    -- steps: waits past their deadline go back to pending, due now (a bounded batch per statement).
    -- twin begin wake_waits
    update {schema}.jobs j set status = 'pending', run_after = _now, updated_at = _now
    where j.id = any(array(
        select id from {schema}.jobs where status = 'waiting' and run_after <= _now
        order by run_after, id limit 1000 for update skip locked))
    returning j.id, j.group_key
), timed_out as (
    update {schema}.job_steps s set status = 'timed_out', finished_at = _now
    from woken w where s.job_id = w.id and s.status = 'waiting'
    -- twin end wake_waits
), job_alerts as (
    insert into {schema}.crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
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
    insert into {schema}.job_attempts (job_id, attempt, started_at, finished_at, outcome, error, traceback)
    select o.id, o.claimed_attempt, w.started_at, _now,
        case when o.status = 'failed' then 'failed' else 'retried' end,
        left(o.last_error, 4096), left(o.traceback, 16384)
    from outcome o
    join written w on w.id = o.id
    where o.attempts >= o.claimed_attempt and o.status <> 'done'
), type_rollup as (
    -- Issue 23, the admin's per-type figures (crontick.admin.figures; the ring table is migration
    -- 0020's), kept apart from the outcome writes: each attempt that ran (done, retried or failed;
    -- not a release or a snooze, which hand the attempt back) counted by type, this minute, the
    -- shard of this backend and its duration bucket: the attempt's own run time (ms, sent by the runner; migration
    -- 0047), else, from a previous release's call, the claim to this statement (a batch's time). Rows go
    -- in key order, so two ticks that share rows cannot deadlock; a row last written for an older
    -- minute of the ring is reset in place. A slow attempt (migration 0044) counts in `slow` as well, whatever
    -- it ended in: a slow job the budget stopped after progress yields, handing its attempt back, and is slow too.
    -- twin begin type_rollup_head
    insert into {schema}.crontick_type_minutes as m (type, slot, shard, bucket, minute, done, failed, retried, slow)
    select w.type, (floor(extract(epoch from _now) / 60)::bigint % 1500)::smallint, (pg_backend_pid() % 4)::smallint,
        least(floor(2 * ln(greatest(coalesce(w.ms, extract(epoch from _now - coalesce(w.started_at, _now)) * 1000), 1)) / ln(2)), 47)::smallint,
    -- twin end type_rollup_head
        date_trunc('minute', _now),
        count(*) filter (where w.status = 'done' and o.attempts >= o.claimed_attempt and not o.snoozed),
        count(*) filter (where w.status = 'failed' and o.attempts >= o.claimed_attempt and not o.snoozed),
        count(*) filter (where w.status not in ('done', 'failed') and o.attempts >= o.claimed_attempt and not o.snoozed),
        count(*) filter (where o.slow)
    from written w
    join outcome o on o.id = w.id
    where (o.attempts >= o.claimed_attempt and not o.snoozed) or o.slow
    -- twin begin type_rollup_tail
    group by 1, 2, 3, 4, 5
    order by 1, 4
    on conflict (type, slot, shard, bucket) do update set
    -- twin end type_rollup_tail
        done = case when m.minute = excluded.minute then m.done else 0 end + excluded.done,
        failed = case when m.minute = excluded.minute then m.failed else 0 end + excluded.failed,
        retried = case when m.minute = excluded.minute then m.retried else 0 end + excluded.retried,
        slow = case when m.minute = excluded.minute then m.slow else 0 end + excluded.slow,
        minute = excluded.minute
), counts as (
    select
        count(*) filter (where w.id is not null and o.status = 'done') as succeeded,
        count(*) filter (where w.id is not null and o.status = 'pending' and o.attempts >= o.claimed_attempt) as retried,
        count(*) filter (where w.id is not null and o.status = 'failed') as failed,
        count(*) filter (where w.id is not null and o.status = 'pending' and o.attempts < o.claimed_attempt
                         and not o.snoozed and not o.yielded) as released,
        count(*) filter (where w.id is null) as fenced,
        count(*) filter (where w.id is not null and o.snoozed) as snoozed,
        -- A yield (a workflow the budget stopped after progress) hands its attempt back, due at once, like a
        -- release, but it ran (crontick.jobs.decision.yields). Counted in the tick's row; the caller counts its own.
        count(*) filter (where w.id is not null and o.yielded) as yielded
    from outcome o
    left join written w on w.id = o.id
), next_job as (
    -- For the summary's next_due_at: the snapshot does not see this statement's own writes,
    -- so the batch's retries (and releases, due now) are counted from the outcomes.
    select least(
        {schema}.crontick_job_next_at(),
        (select min(coalesce(o.run_after, _now)) from outcome o where o.status in ('pending', 'waiting')),
        (select min(run_after) from {schema}.jobs where status = 'waiting')  -- steps: a wait's deadline
        -- A grouped job that ended here lets its group's next job start: read after the settle (at the end).
    ) as at
-- twin begin log_and_answer
)
select array(select w.id from written w) as written,
    c.succeeded, c.retried, c.failed, c.released, c.fenced, to_jsonb(c) as counts,
-- twin end log_and_answer
    -- Whether the caller has more to do: pending jobs due now (the first entry of a partial index;
    -- with a type or group paused, those no pause holds back: sql/functions/job_due_unpaused.sql).
    -- A group this statement moved on is read after the settle (at the end).
    case when not exists (select 1 from {schema}.crontick_pauses p where p.kind in ('type', 'group'))
        then coalesce((select min(run_after) from {schema}.jobs where status = 'pending' and not held) <= _now, false)
        else {schema}.crontick_job_due_unpaused(_now)
    end
        -- steps: woken waits, and waits that began on a kept signal, are due now.
        or exists (select 1 from woken)
        or exists (select 1 from outcome o where o.park is not null and o.status = 'pending' and o.run_after <= _now) as jobs_due,
    (select n.at from next_job n) as next_job_at,
    c.snoozed,
    -- crontick.alerts: whether to send now, from what this statement wrote or the first entry of
    -- a partial index, so a tick with nothing pending spends no statement on alerts.
    exists (select 1 from job_alerts)
        or coalesce((select min(next_attempt_at) from {schema}.crontick_alerts where status = 'pending') <= _now, false) as alerts_due,
    -- flow: as in the shorter path above; a retry or a park leaves its row pending too.
    -- twin begin groups
    array(select w.group_key from written w where w.group_key is not null
          union select k.group_key from woken k where k.group_key is not null) as groups,
    -- twin end groups
    array(select w.id from written w where w.group_key is not null and w.status = 'pending'
          union all select k.id from woken k where k.group_key is not null) as pending
into _r
from counts c;
end if;
-- flow: the groups either statement wrote, settled now that it has run (its snapshot could not see
-- the groups' locks granted), in its transaction.
perform set_config('crontick.group_settle', '', true);
if cardinality(_r.groups) > 0 then
    perform {schema}.crontick_job_groups_settle(_r.groups, _r.pending, null);
    -- A group moved on: its next job, unheld by the settle, is due when its run_after comes (a retry's
    -- backoff, a snooze), and not at all while its type or group is paused (issue 35: `more` only when
    -- due work is really left, and no booking for work held back). One read of the groups' own rows.
    select min(j.run_after) into _group_at from {schema}.jobs j
    where j.group_key = any(_r.groups) and j.status = 'pending' and not j.held
      and j.type <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'type'))
      and j.group_key <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'group'));
    _r.next_job_at := least(_r.next_job_at, _group_at);
    _r.jobs_due := _r.jobs_due or coalesce(_group_at <= _now, false);
end if;
-- The tick's log row, once the groups are settled, so that its next_due_at is the answer's.
if _log then
    insert into {schema}.crontick_ticks (started_at, finished_at, source, summary)
    values (_started_at, _now, _source,
            _summary || jsonb_build_object('jobs', _jobs || _r.counts, 'next_due_at', least(_r.next_job_at, _next_other_at)));
end if;
return query select _r.written, _r.succeeded, _r.retried, _r.failed, _r.released, _r.fenced, _r.jobs_due,
    _r.next_job_at, _r.snoozed, _r.alerts_due;
end
$$;
