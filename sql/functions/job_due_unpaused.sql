-- crontick_job_due_unpaused: whether a pending job is due at `_now` that no pause of its type or
-- group holds back. The record statement's `jobs_due` (sql/functions/job_record_outcomes.sql, both
-- paths), which makes the tick answer `more: true`, calls it only while a type or group is paused
-- (with none, it reads the first entry of jobs_pending_due as before). A paused job type's or
-- group's due jobs are due but cannot start, and a scheduler that calls again while `more` (the
-- GitHub workflow, a QStash loop) must not spin on them (docs/flow-control.md says so).
-- The first 1,000 due jobs in run_after order are looked at, a bounded read whatever the paused
-- backlog; should all 1,000 be paused, an unpaused job due behind them is the claim's (which
-- filters pauses as it reads) on the next tick.
-- A rate limit is not seen here (which types name it is the code's, not the database's): a short
-- batch held back by an exhausted limit is the pipeline's (crontick.tick.pipeline), and the due
-- jobs of a paused limit still answer `more: true`.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_due_unpaused(_now timestamptz) returns boolean
language sql stable as $$
    select exists (
        select 1
        from (select d.type, d.group_key from {schema}.jobs d
              where d.status = 'pending' and not d.held and d.run_after <= _now
              order by d.run_after, d.id limit 1000) d
        where d.type <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'type'))
          and (d.group_key is null
               or d.group_key <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'group'))))
$$;
