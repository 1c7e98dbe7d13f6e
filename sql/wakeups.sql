-- Precise wake-ups (crontick.wakers.booking): the statements a booking adds to a tick.

-- name: wakeup_claim
-- Take the booking of one instant, once across concurrent ticks (sql/functions/wakeup_claim.sql).
-- `attempt`: 0 when the instant is booked already, else which call of the provider this is.
select {schema}.crontick_wakeup_claim(%(instant)s, %(provider)s) as attempt

-- name: wakeup_failed
-- The provider call failed: recorded, and taken again by the next tick (sql/functions/wakeup_failed.sql).
select {schema}.crontick_wakeup_failed(%(instant)s, %(error)s)

-- name: wakeup_status
-- For health, the admin and metrics (crontick.wakers.booking.status): the next instant booked from `now` on
-- (the database's clock when null), the last failure, and how many instants had a call fail in the last day.
select
    (select pg_catalog.min(w.instant) from {schema}.crontick_wakeups w
     where w.status = 'booked' and w.instant >= coalesce(%(now)s, pg_catalog.now())) as next_booked_at,
    f.failed_at as last_failed_at,
    f.error as last_error,
    (select pg_catalog.count(*) from {schema}.crontick_wakeups w
     where w.failed_at > coalesce(%(now)s, pg_catalog.now()) - interval '1 day') as failed_last_day
from (select null) one
left join lateral (
    select w.failed_at, w.error from {schema}.crontick_wakeups w
    where w.failed_at is not null order by w.failed_at desc limit 1
) f on true
