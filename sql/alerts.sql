-- Named queries for health and alerts, loaded once by crontick.db. Each block: who runs it and why.
-- Alerts are written by the statements that write the outcomes behind them (job_record_outcomes,
-- job_rescue_expired, reminder_claim_due, reminder_record_outcomes): an outbox in crontick_alerts.

-- name: health_status
-- GET /api/health (crontick.tick.health.read): the newest tick and whether it is too old, in one
-- statement that reads the first entry of crontick_ticks_finished. The database's clock decides,
-- so an app server with a wrong clock cannot hide a silence.
-- reminders_error: why the newest tick sent no reminders, when its reminder source was to blame
-- (CONTRACT.md "A source that does not match"), read from its summary by the same index.
select t.last_tick_at,
    t.last_tick_at is null or t.last_tick_at < pg_catalog.now() - pg_catalog.make_interval(secs => %(stale_after)s::float8) as stale,
    (select l.summary -> 'reminders'::text ->> 'error'::text from {schema}.crontick_ticks l
     order by l.finished_at desc limit 1) as reminders_error
from (select pg_catalog.max(finished_at) as last_tick_at from {schema}.crontick_ticks) t;

-- name: alert_claim_due
-- crontick.tick.alerts.deliver, in a tick whose record statement said alerts are due: claim up to a
-- batch of due pending alerts in one statement. Each is leased (next_attempt_at moves to
-- lease_until) and its attempt counted, so a concurrent tick skips it and no transaction stays
-- open while it is sent. An alert raised before stale_before and never sent (e.g. while no URL
-- was configured) is closed as failed instead: a day-old "job failed" in a chat is noise.
with due as materialized (
    select id from {schema}.crontick_alerts
    where status = 'pending' and next_attempt_at <= %(now)s
    order by next_attempt_at, id
    limit %(limit)s
    for update skip locked
), claimed as (
    update {schema}.crontick_alerts a set
        status = case when a.created_at < %(stale_before)s then 'failed' else 'pending' end,
        attempts = a.attempts + (a.created_at >= %(stale_before)s)::int,
        next_attempt_at = %(lease_until)s,
        last_error = case when a.created_at < %(stale_before)s
            then 'not sent: raised at ' || a.created_at::text || ', longer ago than alerts are worth sending'
            else a.last_error end,
        updated_at = %(now)s
    where a.id = any(array(select id from due))
    returning a.id, a.event, a.body, a.attempts, a.status, a.occurred_at
)
select id, event, body, attempts, occurred_at
from claimed
where status = 'pending'
order by id;

-- name: alert_record_outcomes
-- crontick.tick.alerts.deliver, after the sends: every outcome in one statement. Fenced on the
-- attempt this tick claimed, so a tick that outlived its lease changes nothing. A failure with
-- a retry_at waits for it; without one (the last attempt, or a refusal) the alert is closed
-- as failed, and raises no further alert.
with delivery as (
    select *
    from rows from (pg_catalog.unnest(%(ids)s::bigint[]), pg_catalog.unnest(%(attempts)s::int[]), pg_catalog.unnest(%(sent)s::boolean[]), pg_catalog.unnest(%(retry_ats)s::timestamptz[]),
                pg_catalog.unnest(%(errors)s::text[])) as o(id, attempt, sent, retry_at, error)
)
update {schema}.crontick_alerts a set
    status = case when o.sent then 'sent' when o.retry_at is null then 'failed' else 'pending' end,
    sent_at = case when o.sent then %(now)s::timestamptz end,
    next_attempt_at = coalesce(o.retry_at, a.next_attempt_at),
    last_error = coalesce(o.error, a.last_error),
    updated_at = %(now)s
from delivery o
where a.id = o.id and a.status = 'pending' and a.attempts = o.attempt
returning a.id, a.status;
