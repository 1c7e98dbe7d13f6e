-- Named queries of GET /api/metrics (crontick.admin.metrics), run inside admin_read_begin's
-- read-only transaction with its short statement_timeout, like every admin read.

-- name: metrics_read
-- crontick.admin.metrics.read_figures: every series of a scrape in one statement, each from the
-- range of an index or a bounded table, never a scan of jobs, so a scrape costs the same at a
-- million rows. Counts stop at %(cap)s (the caller reports that as "at least"). Jobs per type and
-- status: crontick_job_types' skip scan (at most %(types)s types), then one capped range of
-- jobs_type_status_id each, one arm per status with the status a constant (with the status a column of
-- a VALUES list the planner walked the primary key instead, counting on the limit: 0.7 s at 200,000 rows;
-- pending jobs as two arms, the startable ones from jobs_pending_type_id, as admin_type_pending reads them); running jobs, which that skip scan leaves out, from their own few rows
-- (jobs_running_lease). Due jobs and the oldest one's wait: jobs_pending_due. The last tick:
-- crontick_ticks_finished. Reminders: reminder_sends_status_id. Attempts and their durations in
-- the last hour: the per-type ring (crontick_type_minutes, migration 0020). The jobs' other
-- outcomes (snoozed, rescued, released, fenced) and the reminders sent: the last hour's tick
-- summaries (crontick_ticks_finished), yields among them. Wake-ups booked and failed in the last day, and the
-- next one booked: crontick_wakeups. Slow attempts per type: the same ring's `slow` (migration 0044). Step
-- durations: their own ring, crontick_step_minutes (migration 0044). Rate limits: each one this process
-- declares (%(limits)s, from crontick.flow.claim_args: name, count, window, types), its starts within its
-- window from its one crontick_rate_limits row, and, while it holds jobs back (exhausted or paused), its
-- types' due jobs, capped, from jobs_pending_due's due range.
select
    (select coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(t.type, c.n)), '[]'::json)
     from {schema}.crontick_job_types(%(types)s) t(type)
     cross join lateral (select pg_catalog.json_build_object(
         'pending', least(%(cap)s,
             (select pg_catalog.count(*) from (select 1 from {schema}.jobs j
                                               where j.type = t.type and j.status = 'pending' and not j.held order by j.id limit %(cap)s) x)
             + (select pg_catalog.count(*) from (select 1 from {schema}.jobs j
                                                 where j.type = t.type and j.status = 'pending' and j.held order by j.id limit %(cap)s) x)),
         'waiting', (select pg_catalog.count(*) from (select 1 from {schema}.jobs j
                                            where j.type = t.type and j.status = 'waiting' order by j.id limit %(cap)s) x),
         'done', (select pg_catalog.count(*) from (select 1 from {schema}.jobs j
                                            where j.type = t.type and j.status = 'done' order by j.id limit %(cap)s) x),
         'failed', (select pg_catalog.count(*) from (select 1 from {schema}.jobs j
                                            where j.type = t.type and j.status = 'failed' order by j.id limit %(cap)s) x),
         'cancelled', (select pg_catalog.count(*) from (select 1 from {schema}.jobs j
                                            where j.type = t.type and j.status = 'cancelled' order by j.id limit %(cap)s) x)) as n) c) as jobs,
    (select coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(r.type, 'running', r.n)), '[]'::json)
     from (select x.type, pg_catalog.count(*) as n
           from (select j.type from {schema}.jobs j where j.status = 'running' limit %(cap)s) x
           group by x.type) r) as running,
    (select pg_catalog.count(*)
     from (select 1 from {schema}.jobs j
           where j.status = 'pending' and not j.held and j.run_after <= pg_catalog.now() limit %(cap)s) d) as due,
    extract(epoch from pg_catalog.now() - (
        select pg_catalog.min(j.run_after) from {schema}.jobs j
        where j.status = 'pending' and not j.held and j.run_after <= pg_catalog.now()))::float8 as oldest_due_seconds,
    extract(epoch from pg_catalog.now() - (
        select pg_catalog.max(k.finished_at) from {schema}.crontick_ticks k))::float8 as last_tick_seconds,
    (select pg_catalog.json_agg(pg_catalog.json_build_array(s.status, c.n))
     from (values ('sending'::text), ('sent'), ('failed'), ('unknown')) s(status)
     cross join lateral (
         select pg_catalog.count(*) as n
         from (select 1 from {schema}.reminder_sends r where r.status = s.status limit %(cap)s) x
     ) c) as reminders,
    (select coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(m.type, m.bucket, m.done, m.failed, m.retried, m.slow)), '[]'::json)
     from (select w.type, w.bucket, pg_catalog.sum(w.done)::bigint as done, pg_catalog.sum(w.failed)::bigint as failed,
               pg_catalog.sum(w.retried)::bigint as retried, pg_catalog.sum(w.slow)::bigint as slow
           from {schema}.crontick_type_minutes w
           where w.minute > pg_catalog.now() - interval '1 hour'
           group by w.type, w.bucket) m) as attempts,
    (select coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(m.type, m.bucket, m.steps)), '[]'::json)
     from (select w.type, w.bucket, pg_catalog.sum(w.steps)::bigint as steps
           from {schema}.crontick_step_minutes w
           where w.minute > pg_catalog.now() - interval '1 hour'
           group by w.type, w.bucket) m) as steps,
    (select coalesce(pg_catalog.json_agg(pg_catalog.json_build_array(l.name, u.used, l.count, h.held)), '[]'::json)
     from pg_catalog.json_to_recordset(%(limits)s::json) l(name text, count int, seconds float8, types text[])
     cross join lateral (
         select coalesce((select pg_catalog.sum(s.n)
                          from {schema}.crontick_rate_limits r,
                               rows from (pg_catalog.unnest(r.starts_at), pg_catalog.unnest(r.starts_n)) s(at, n)
                          where r.name = l.name and s.at > pg_catalog.now() - pg_catalog.make_interval(secs => l.seconds)),
                         0)::int as used) u
     cross join lateral (
         select exists (select 1 from {schema}.crontick_pauses x where x.kind = 'rate_limit' and x.name = l.name) as paused) p
     cross join lateral (
         select case when u.used >= l.count or p.paused then
             (select pg_catalog.count(*) from (select 1 from {schema}.jobs j
                                               where j.status = 'pending' and not j.held and j.run_after <= pg_catalog.now()
                                                 and j.type = any(l.types) limit %(cap)s) x)
             else 0 end as held) h) as rate_limits,
    (select pg_catalog.json_build_object(
        'ticks', pg_catalog.count(*),
        'succeeded', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'succeeded'::text)::bigint), 0),
        'retried', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'retried'::text)::bigint), 0),
        'failed', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'failed'::text)::bigint), 0),
        'snoozed', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'snoozed'::text)::bigint), 0),
        'rescued', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'rescued'::text)::bigint), 0),
        'released', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'released'::text)::bigint), 0),
        'fenced', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'fenced'::text)::bigint), 0),
        'yielded', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'yielded'::text)::bigint), 0),
        'expired', coalesce(pg_catalog.sum((k.summary -> 'jobs'::text ->> 'expired'::text)::bigint), 0),
        'reminders_sent', coalesce(pg_catalog.sum((k.summary -> 'reminders'::text ->> 'sent'::text)::bigint), 0),
        'reminders_failed', coalesce(pg_catalog.sum((k.summary -> 'reminders'::text ->> 'failed'::text)::bigint), 0))
     from {schema}.crontick_ticks k
     where k.finished_at > pg_catalog.now() - interval '1 hour') as ticks,
    -- Precise wake-ups (crontick.wakers): the figures of sql/wakeups.sql wakeup_status (change both together), from
    -- crontick_wakeups, a table of at most 30 days of instants (each claim prunes it).
    (select pg_catalog.json_build_object(
        'booked', (select pg_catalog.count(*) from {schema}.crontick_wakeups w
                   where w.status = 'booked' and w.booked_at > pg_catalog.now() - interval '1 day'),
        'failed', (select pg_catalog.count(*) from {schema}.crontick_wakeups w
                   where w.failed_at > pg_catalog.now() - interval '1 day'),
        'next_at', extract(epoch from (select pg_catalog.min(w.instant) from {schema}.crontick_wakeups w
                                       where w.status = 'booked' and w.instant >= pg_catalog.now()))::float8)) as wakeups;
