-- crontick_job_next_at: when the first pending job that may start comes due: not held (a group's jobs
-- behind its head), and of no paused type or group, nor of a type whose rate limit is paused. Null: no such
-- job. The probe's next_job_at (sql/functions/tick_probe.sql) and the record statement's
-- (sql/functions/job_record_outcomes.sql, both paths) read it, and a tick's next_due_at, which precise
-- wake-ups book (crontick.tick.wakeups_duty), comes from them: a pause has no release time, so a paused job
-- that counted here would be a wake-up a minute for nothing (issue 35); the admin's resume starts a tick at
-- once (crontick.admin.answer.kicking), which runs what is due and books what comes due later.
-- `_flow`: the claim's flow argument (crontick.flow.claim_args), whose `limits` name each rate limit's types:
-- which types use a limit is known only in the code, so a paused rate limit (a crontick_pauses row of kind
-- 'rate_limit') holds back the types it lists there. Null (no limit declared, or a caller without it: the
-- record statement): paused limits are not looked at, and their jobs count as due.
-- With nothing paused (the usual case) it reads the first entry of jobs_pending_due, as before. With a
-- type, group or (given `_flow`) rate limit paused, the first 1,000 pending jobs in run_after order are
-- looked at (a bounded read, as crontick_job_due_unpaused does); should all 1,000 be paused, the last one's
-- time is returned, so a tick looks again then rather than never.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships: sql/migrations/0048_next_at_flow.sql).
create or replace function {schema}.crontick_job_next_at(_flow jsonb default null) returns timestamptz
language sql stable as $$
    select case
        when not exists (select 1 from {schema}.crontick_pauses p
                         where p.kind in ('type', 'group') or p.kind = 'rate_limit' and _flow is not null)
            then (select pg_catalog.min(j.run_after) from {schema}.jobs j where j.status = 'pending' and not j.held)
        else (
            select case when pg_catalog.count(*) filter (where d.free) > 0
                            then pg_catalog.min(d.run_after) filter (where d.free)
                        when pg_catalog.count(*) >= 1000 then pg_catalog.max(d.run_after) end
            from (select j.run_after,
                      j.type <> all(array(
                          select p.name from {schema}.crontick_pauses p where p.kind = 'type'
                          union all
                          select t.type
                          from {schema}.crontick_pauses p,
                               pg_catalog.jsonb_to_recordset(coalesce(_flow -> 'limits', '[]'))
                                   as l(name text, types text[]),
                               pg_catalog.unnest(l.types) as t(type)
                          where p.kind = 'rate_limit' and p.name = l.name))
                      and (j.group_key is null
                           or j.group_key <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'group')))
                      as free
                  from {schema}.jobs j
                  where j.status = 'pending' and not j.held
                  order by j.run_after, j.id limit 1000) d)
    end
$$;
