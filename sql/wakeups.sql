-- Precise wake-ups (crontick.wakers.booking): the statements a booking adds to a tick.

-- name: wakeup_claim
-- After the provider's call, the one statement a booking adds (sql/functions/wakeup_claim.sql): its outcome
-- recorded (`error` null: booked, with the `message_id` the provider answered), the delivered instant `served`, and
-- the superseded bookings the call cancelled. `recorded` false: a concurrent tick booked this instant meanwhile (the
-- provider deduplicated this call by its key). `needed_at`: a cancelled booking an enqueue since needed, to book now.
select c.recorded, c.needed_at
from {schema}.crontick_wakeup_claim(%(instant)s, %(provider)s, %(generation)s, %(attempt)s, %(message_id)s,
                                    %(error)s, %(served)s, %(cancelled)s, %(cancelled_generations)s) c

-- name: wakeup_ledger
-- The database's clock and the bookings from it on (sql/functions/wakeup_ledger.sql), for a booking without a probe
-- to read them from (crontick.wakers.ledger.read: a kick's booking with CRONTICK_KICK=off, a drain's later batches).
select pg_catalog.now() as now, {schema}.crontick_wakeup_ledger(pg_catalog.now(), %(rows)s) as bookings

-- name: wakeup_served
-- A delivered tick that books nothing records its instant as served (crontick.tick.wakeups_duty); one that books
-- does so in wakeup_claim.
update {schema}.crontick_wakeups w set served_at = pg_catalog.now()
where w.instant = %(instant)s and w.served_at is null

-- name: wakeup_served_at
-- Before a delivered tick runs (crontick.runtime.Runtime.tick): when its instant was served already, if it was;
-- no row: never booked here. A second delivery for a served instant is a duplicate, answered without a tick.
select w.served_at from {schema}.crontick_wakeups w where w.instant = %(instant)s

-- name: wakeup_status
-- For health and the admin (crontick.wakers.booking.status): the next instant booked from `now` on (the
-- database's clock when null), the last failure, how many instants had a call fail in the last day, and how many
-- were booked in the last day (their last call, successful so far). GET /api/metrics reads the same figures in its
-- own one statement (sql/metrics.sql metrics_read, `wakeups`): change both together.
select
    (select pg_catalog.min(w.instant) from {schema}.crontick_wakeups w
     where w.status = 'booked' and w.instant >= coalesce(%(now)s, pg_catalog.now())) as next_booked_at,
    f.failed_at as last_failed_at,
    f.error as last_error,
    (select pg_catalog.count(*) from {schema}.crontick_wakeups w
     where w.failed_at > coalesce(%(now)s, pg_catalog.now()) - interval '1 day') as failed_last_day,
    (select pg_catalog.count(*) from {schema}.crontick_wakeups w
     where w.status = 'booked' and w.booked_at > coalesce(%(now)s, pg_catalog.now()) - interval '1 day') as booked_last_day
from (select null) one
left join lateral (
    select w.failed_at, w.error from {schema}.crontick_wakeups w
    where w.failed_at is not null order by w.failed_at desc limit 1
) f on true

-- name: health_due_waiting
-- GET /api/health with a waker set (crontick.tick.health.read): since when due work has waited unpicked longer than
-- the grace, by the database's clock (null: nothing has). Work held back on purpose is not due: a group's jobs
-- behind its head (`held`), a paused type or group, a type that names a rate limit (`limited`: its window, not a
-- tick, decides when it starts); snoozes and backoff are a later run_after already. The first 1,000 due pending jobs
-- in run_after order are looked at (as crontick_job_due_unpaused does); a waiting job's deadline counts too, and so
-- does a running job's lease that ended (its tick was killed mid-run: due for rescue, which no booking asked for).
select least(
    (select pg_catalog.min(d.run_after)
     from (select j.type, j.group_key, j.run_after from {schema}.jobs j
           where j.status = 'pending' and not j.held and j.run_after <= c.cutoff
           order by j.run_after, j.id limit 1000) d
     where d.type <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'type'))
       and d.type <> all(%(limited)s::text[])
       and (d.group_key is null
            or d.group_key <> all(array(select p.name from {schema}.crontick_pauses p where p.kind = 'group')))),
    (select pg_catalog.min(w.run_after) from {schema}.jobs w where w.status = 'waiting' and w.run_after <= c.cutoff),
    (select pg_catalog.min(r.locked_until) from {schema}.jobs r where r.status = 'running' and r.locked_until <= c.cutoff)
) as waiting_since
from (select pg_catalog.now() - pg_catalog.make_interval(secs => %(grace)s::float8) as cutoff) c
