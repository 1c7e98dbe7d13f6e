-- Precise wake-ups (crontick.wakers.booking): the statements a booking adds to a tick.

-- name: wakeup_claim
-- Take the booking of one instant, once across concurrent ticks (sql/functions/wakeup_claim.sql).
select {schema}.crontick_wakeup_claim(%(instant)s, %(provider)s) as taken

-- name: wakeup_failed
-- The provider call failed: recorded, and taken again by the next tick (sql/functions/wakeup_failed.sql).
select {schema}.crontick_wakeup_failed(%(instant)s, %(error)s)
