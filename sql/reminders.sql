-- Named queries for booking reminders, loaded once by crontick.db. Each block: who runs it and why.
-- The exactly-once rule lives in reminder_sends' unique (booking_id, kind): a reminder is
-- claimed by inserting its row before any provider is called, and only the inserting tick sends.

-- name: reminder_claim_due
-- crontick.reminders.send.send_due, once per tick: claim up to a batch of reminders in ONE statement,
-- however many are due (the tick's statement count stays constant).
-- The bookings are read from the reminder source ({reminder_source}: CRONTICK_REMINDER_SOURCE,
-- default crontick's own bookings), which may be the user's own table or view: it is only read,
-- never locked or written (a FOR UPDATE there would block the user's own updates). Its id is
-- compared as text (reminder_sends.booking_id, migration 0016), whatever its type; its whole row comes
-- back as source_row (jsonb), so its optional `language` and the other columns a template names need
-- no other statement. A channel that sends to an email address (by_email) or a phone (by_phone) is
-- chosen only for a booking that has one.
--   overdue: rows of earlier ticks that need a decision now: failures whose retry is due, and
--            rows still 'sending' after their lease (the tick sending them died mid-call).
--   settled: each overdue row becomes 'sending' again (a retry; after a dead tick only on a
--            channel whose idempotency key the provider honours), 'unknown' (it may have gone
--            out and resending could duplicate it), or a final 'failed' (the booking was
--            cancelled, has started or is gone, so a retry is pointless).
--   fresh:   confirmed bookings inside a kind's window that have no row for that kind yet,
--            up to what is left of the batch. A kind's window is (now + the next shorter kind's
--            offset, now + its own offset], so a late booking gets only the nearest reminder.
--   inserted: the claim itself. ON CONFLICT DO NOTHING on (booking_id, kind) means that when
--            ticks race for a reminder exactly one insert wins, and only the winner sends (a
--            racing insert waits for the winner's commit, then does nothing).
-- MATERIALIZED so LIMIT and SKIP LOCKED are applied once, not re-evaluated per outer row. The
-- only row locks are on reminder_sends (overdue's SKIP LOCKED spreads concurrent ticks there);
-- correctness rests on the unique constraint, not on a lock.
-- src: the source's rows as crontick reads them, written once; NOT MATERIALIZED, so each use below
-- is planned against the source itself (its indexes), never a copy of it.
-- Some aliases go without `as`, and the lease message is one format(): the statement is just under
-- psycopg's 4 KiB parse cache (tests/alerts/test_alert_policy.py).
with src as not materialized (
    select b.id::text booking_id, b.customer_name, b.email, b.phone, b.starts_at, b.time_zone, b.status,
        pg_catalog.to_jsonb(b) source_row
    from {reminder_source} b
), overdue as materialized (
    select r.id,
        case
            when r.status = 'sending' and b.status = 'confirmed' and b.starts_at > %(now)s
                 and r.channel = any(%(idempotent)s::text[]) and r.attempts < r.max_attempts then 'sending'
            when r.status = 'sending' then 'unknown'
            when b.status = 'confirmed' and b.starts_at > %(now)s then 'sending'
            when r.maybe_delivered then 'unknown'
            else 'failed'
        end next_status,
        case
            when b.booking_id is null then 'the booking is gone'
            when b.status <> 'confirmed' then 'the booking was cancelled'
            when b.starts_at <= %(now)s then 'the booking has started'
            when r.channel <> all(%(idempotent)s::text[]) then 'the ' || r.channel || ' channel has no idempotency key'
            else 'no attempts are left'
        end reason,
        b.customer_name, b.email, b.phone, b.starts_at, b.time_zone, b.source_row
    from {schema}.reminder_sends r
    left join src b using (booking_id)
    where (r.status = 'sending' and r.locked_until < %(now)s)
       or (r.status = 'failed' and r.next_attempt_at <= %(now)s)
    order by coalesce(r.next_attempt_at, r.locked_until), r.id
    limit %(limit)s
    for update of r skip locked
), settled as (
    update {schema}.reminder_sends r set
        status = o.next_status,
        attempts = r.attempts + (o.next_status = 'sending')::int,
        -- a row still 'sending' after its lease: its tick died mid-call, so it may have gone out
        maybe_delivered = r.maybe_delivered or r.status = 'sending',
        locked_until = case when o.next_status = 'sending' then %(lease_until)s::timestamptz end,
        next_attempt_at = null,
        last_error = case
            when o.next_status = 'sending' then r.last_error
            when r.status = 'sending' then pg_catalog.format('LeaseExpired: attempt %%s over %%s was still sending when its'
                || ' lease ended at %%s (tick stopped mid-call); maybe delivered, not resent: %%s. Check the provider;'
                || ' delete the row to resend.', r.attempts, r.channel, r.locked_until, o.reason)
            else coalesce(r.last_error, 'failed') || ' (not retried: ' || o.reason || ')'
        end,
        updated_at = %(now)s
    from overdue o
    where r.id = o.id
    returning r.*, o.customer_name, o.email, o.phone, o.starts_at, o.time_zone, o.source_row
), settled_alerts as (
    -- crontick.tick.alerts: a reminder settled here as a final 'failed' or 'unknown' raises its alert
    -- in this statement (an outbox), once per reminder outcome. Kept short: this statement must
    -- stay under psycopg's 4 KiB parse-cache limit.
    insert into {schema}.crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'reminder_' || s.status, 'reminder:' || s.booking_id || ':' || s.kind, %(now)s,
        pg_catalog.jsonb_build_object('booking_id', s.booking_id, 'kind', s.kind, 'channel', s.channel, 'attempts', s.attempts,
                           'error', o.reason),
        %(now)s, %(now)s, %(now)s
    from settled s join overdue o on o.id = s.id
    where s.status in ('failed', 'unknown')
    on conflict do nothing
), fresh as materialized (
    select b.*, k.kind,
        coalesce(
            (select c from pg_catalog.unnest(%(channels)s::text[]) with ordinality ch(c, n)
             where (c <> all(%(by_email)s::text[]) or b.email <> '') and (c <> all(%(by_phone)s::text[]) or b.phone <> '')
             order by n limit 1),
            (%(channels)s::text[])[1]
        ) channel
    from src b
    join rows from (pg_catalog.unnest(%(kinds)s::text[]), pg_catalog.unnest(%(leads)s::interval[]), pg_catalog.unnest(%(floors)s::interval[])) k(kind, lead, floor)
        on b.starts_at > %(now)s + k.floor and b.starts_at <= %(now)s + k.lead
    -- The widest window, (now, window_end = now + the longest lead], as a range of an index on
    -- the source's starts_at: without one the join reads every booking ever made (docs/reminders.md
    -- measures it). `offset 0` keeps not exists a lookup in the unique (booking_id, kind), never a
    -- hash of the whole send log (sql/functions/tick_probe.sql). A source row without an id (a view's
    -- outer join) cannot be keyed, so it gets no reminder, rather than failing every tick's claim.
    where b.status = 'confirmed' and b.booking_id is not null
      and b.starts_at > %(now)s and b.starts_at <= %(window_end)s
      and not exists (select 1 from {schema}.reminder_sends r where r.booking_id = b.booking_id and r.kind = k.kind offset 0)
    order by b.starts_at, b.booking_id, k.kind
    limit greatest(%(limit)s - (select count(*) from overdue where next_status = 'sending'), 0)
), inserted as (
    -- status 'sending' and attempts 1 are the columns' defaults; the only conflict a new row can
    -- meet is reminder_sends_booking_kind_unique (its id is generated).
    insert into {schema}.reminder_sends (booking_id, kind, channel, max_attempts, locked_until, created_at, updated_at)
    select booking_id, kind, channel, %(max_attempts)s, %(lease_until)s, %(now)s, %(now)s
    from fresh
    on conflict do nothing
    returning *
)
-- Each claimed row (every column of reminder_sends: crontick.reminders.send reads the ones it
-- needs) with the booking it was claimed for, from fresh's and overdue's own reads of the source.
-- A fresh reminder that another tick inserted first (after this statement's snapshot, or still
-- uncommitted) comes back with reminder_sends' columns null: the tick then answers `more`, since
-- the due reminders it lost are not all there are, and a draining tick goes on to share the rest
-- instead of stopping at an empty batch.
select i.*, f.customer_name, f.email, f.phone, f.starts_at, f.time_zone, f.source_row
from fresh f left join inserted i using (booking_id, kind)
union all
select * from settled
order by starts_at, id;

-- name: reminder_record_outcomes
-- crontick.reminders.send.send_due, once per tick after the sends: every outcome in ONE statement.
-- Fenced: a row changes only while it is still 'sending' the attempt this tick claimed, so a
-- tick that outlived its lease changes nothing once another tick has taken the row over.
-- `mine` locks those rows with SKIP LOCKED: a row another tick has locked is being taken over,
-- so it counts as fenced, and recording never waits on a lock (which could close a deadlock
-- with a claim that waits on this statement's own changes).
-- 'released' means the tick ran out of time before the attempt started: a first attempt is
-- un-claimed (deleted, as if never claimed) and a later one goes back to its due retry.
with outcome as (
    select *
    from rows from (pg_catalog.unnest(%(ids)s::bigint[]), pg_catalog.unnest(%(claimed_attempts)s::int[]), pg_catalog.unnest(%(statuses)s::text[]),
                pg_catalog.unnest(%(next_attempt_ats)s::timestamptz[]), pg_catalog.unnest(%(errors)s::text[]), pg_catalog.unnest(%(provider_ids)s::text[]),
                pg_catalog.unnest(%(ambiguous)s::boolean[]))
        as o(id, claimed_attempt, status, next_attempt_at, last_error, provider_message_id, ambiguous)
), mine as materialized (
    select r.id, r.attempts = 1 and o.status = 'released' as unclaim
    from {schema}.reminder_sends r
    join outcome o on o.id = r.id
    where r.status = 'sending' and r.attempts = o.claimed_attempt
    order by r.id
    for update of r skip locked
), unclaimed as (
    delete from {schema}.reminder_sends r
    using mine m
    where r.id = m.id and m.unclaim
    returning r.id
), written as (
    update {schema}.reminder_sends r set
        status = case when o.status = 'released' then 'failed' else o.status end,
        attempts = r.attempts - (o.status = 'released')::int,
        next_attempt_at = case when o.status = 'released' then %(now)s::timestamptz else o.next_attempt_at end,
        last_error = case when o.status = 'released' then r.last_error else o.last_error end,
        provider_message_id = coalesce(o.provider_message_id, r.provider_message_id),
        maybe_delivered = r.maybe_delivered or o.ambiguous,
        sent_at = case when o.status = 'sent' then %(now)s::timestamptz end,
        locked_until = null,
        updated_at = %(now)s
    from mine m
    join outcome o on o.id = m.id
    where r.id = m.id and not m.unclaim
    returning r.id, r.booking_id, r.kind, r.channel, r.status, r.attempts, r.next_attempt_at, r.last_error
), alerted as (
    -- crontick.tick.alerts: an outcome written as a final 'failed' (no retry due) or 'unknown' raises
    -- its alert in this statement (an outbox), once per reminder outcome.
    insert into {schema}.crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'reminder_' || w.status, 'reminder:' || w.booking_id || ':' || w.kind, %(now)s,
        pg_catalog.jsonb_build_object('booking_id', w.booking_id, 'kind', w.kind, 'channel', w.channel, 'attempts', w.attempts,
                           'error', pg_catalog.left(w.last_error, 500)),
        %(now)s, %(now)s, %(now)s
    from written w
    where w.status = 'unknown' or (w.status = 'failed' and w.next_attempt_at is null)
    on conflict on constraint crontick_alerts_once do nothing
)
select id from unclaimed
union all
select id from written;

-- name: reminder_next_due
-- crontick.tick.reminders_duty, with a waker set (CRONTICK_WAKER), after a tick that sent reminders: when the next
-- reminder falls due now that these are claimed. The probe's own time was that of the reminders just sent, so
-- without this the wake-ups duty had nothing to book for the next one, and it waited for the safety net (the
-- simulated day, bench/wakeup_day.py, found 3 of 24 reminders hours late). The probe's expression
-- (sql/functions/tick_probe.sql, next_reminder_at), on the same windows.
select least(
    (select pg_catalog.min(next_attempt_at) from {schema}.reminder_sends where status = 'failed' and next_attempt_at is not null),
    {schema}.crontick_reminder_next_due(%(now)s::timestamptz, %(kinds)s::text[], %(leads)s::interval[],
                                        %(floors)s::interval[])
) as next_at;

-- name: booking_insert_demo
-- crontick.demo.seed (`make run`): demo bookings at the start of this hour plus an offset (so
-- they read 09:30, not 09:37). One is added only while no booking for that customer is still
-- upcoming, so re-running the seed adds nothing, and a later day's `make run` gets fresh ones.
insert into {schema}.bookings (customer_name, email, phone, starts_at, time_zone, status)
select d.name, d.email, d.phone, pg_catalog.date_trunc('hour', now()) + d.starts_in, d.zone, d.status
from rows from (pg_catalog.unnest(%(names)s::text[]), pg_catalog.unnest(%(emails)s::text[]), pg_catalog.unnest(%(phones)s::text[]), pg_catalog.unnest(%(starts_in)s::interval[]),
            pg_catalog.unnest(%(zones)s::text[]), pg_catalog.unnest(%(statuses)s::text[])) as d(name, email, phone, starts_in, zone, status)
where not exists (select 1 from {schema}.bookings b where b.customer_name = d.name and b.starts_at > now())
returning id;
