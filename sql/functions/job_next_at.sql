-- crontick_job_next_at: when the first pending job that may start comes due: not held (a group's jobs
-- behind its head), and of no paused type or group. Null: no such job. The probe's next_job_at
-- (sql/functions/tick_probe.sql) and the record statement's (sql/functions/job_record_outcomes.sql,
-- both paths) read it, and a tick's next_due_at, which precise wake-ups book (crontick.tick.wakeups_duty),
-- comes from them: a pause has no release time, so a paused job that counted here would be a
-- wake-up a minute for nothing (issue 35); the admin's resume starts a tick at once
-- (crontick.admin.answer.kicking), which runs what is due and books what comes due later.
-- With nothing paused (the usual case) it reads the first entry of jobs_pending_due, as before. With a
-- type or group paused, the first 1,000 pending jobs in run_after order are looked at (a bounded read,
-- as crontick_job_due_unpaused does); should all 1,000 be paused, the last one's time is returned, so
-- a tick looks again then rather than never.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_next_at() returns timestamptz
language sql stable as $$
    select case
        when not exists (select 1 from {schema}.crontick_pauses p where p.kind in ('type', 'group'))
            then (select min(j.run_after) from {schema}.jobs j where j.status = 'pending' and not j.held)
        else (
            select case when count(*) filter (where d.free) > 0 then min(d.run_after) filter (where d.free)
                        when count(*) >= 1000 then max(d.run_after) end
            from (select j.run_after,
                      j.type <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'type'))
                      and (j.group_key is null
                           or j.group_key <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'group')))
                      as free
                  from {schema}.jobs j
                  where j.status = 'pending' and not j.held
                  order by j.run_after, j.id limit 1000) d)
    end
$$;
