-- crontick_job_steps_record: the steps that finished while the previous call was on the wire, from every job of
-- the batch, written in one call (group commit): each job.step returns only once its row is committed. Called by
-- sql/workflows.sql job_steps_record (crontick.workflows.commit.GroupCommit), once per round. A function, not a
-- statement, for its plan: the connection keeps it, where the statement was parsed and planned again on every
-- round, which cost about as much as running it for a round of ten steps.
-- Fenced like every outcome write: a step is written only while its job is still running the attempt that ran it
-- (a late finisher after a rescue records nothing, and learns so from the ids missing from the answer). FOR SHARE
-- holds the job row against a concurrent rescue until the call commits. `_steps` is a JSON array of
-- [job_id, attempt, name, result, seconds], the result as a JSON value (not its text in a string: that was encoded
-- twice, escaped by Python and unescaped here): seconds, how long a job.step's function ran (null for
-- crontick's own rows), goes to the per-type ring of step durations (migration 0044, as crontick_type_minutes is
-- kept: a minute's row reset in place, rows in key order), read by GET /api/metrics.
-- A handler's result ('crontick:result') that an earlier run of the same job recorded (killed after it, before
-- its outcome was recorded) counts as written: the first one stands, and the re-run that returned again still
-- succeeds (without this it read as fenced and failed).
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_steps_record(_steps json)
returns table (job_id bigint, name text)
language plpgsql
as $$
begin
    return query
    with step as (
        select (s ->> 0)::bigint as job_id, (s ->> 1)::int as attempt, s ->> 2 as name, (s -> 3)::jsonb as result,
            (s ->> 4)::float8 as seconds
        from json_array_elements(_steps) s
    ), ours as materialized (
        select s.*, j.type from step s
        -- `is true`: the same test, matched by no partial index, so jobs is read by primary key
        -- (sql/functions/job_record_outcomes.sql says why).
        join {schema}.jobs j on j.id = s.job_id and (j.status = 'running') is true and j.attempts = s.attempt
        for share of j
    ), written as (
        insert into {schema}.job_steps as t (job_id, name, kind, status, attempt, result, created_at, finished_at)
        select o.job_id, o.name, 'step', 'done', o.attempt, o.result, now(), now()
        from ours o
        on conflict on constraint job_steps_pkey do nothing
        returning t.job_id, t.name
    ), step_rollup as (
        insert into {schema}.crontick_step_minutes as m (type, slot, shard, bucket, minute, steps)
        select o.type, (floor(extract(epoch from now()) / 60)::bigint % 1500)::smallint, (pg_backend_pid() % 4)::smallint,
            least(floor(2 * ln(greatest(o.seconds * 1000, 1)) / ln(2)), 47)::smallint,
            date_trunc('minute', now()), count(*)
        from ours o
        -- The steps written: all of `ours` when nothing conflicted (a count each); else each found in `written`, a
        -- nested loop of n² comparisons (both sides are planned as one row) that cost half the call for a round
        -- of 100 steps when it ran every time.
        where o.seconds is not null
            and ((select count(*) from written) = (select count(*) from ours)
                 or exists (select from written w where w.job_id = o.job_id and w.name = o.name))
        group by 1, 2, 3, 4, 5
        order by 1, 4
        on conflict (type, slot, shard, bucket) do update set
            steps = case when m.minute = excluded.minute then m.steps else 0 end + excluded.steps,
            minute = excluded.minute
    )
    select w.job_id, w.name from written w
    union all
    select o.job_id, o.name from ours o
    where o.name = 'crontick:result'
        and not exists (select from written w where w.job_id = o.job_id and w.name = o.name);
end;
$$;
