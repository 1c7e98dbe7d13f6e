-- 0016: reminders from the user's own table (CONTRACT.md "Reminders from your own table", issue 19).
-- CRONTICK_REMINDER_SOURCE may name any table or view, whose id may be of any type (a uuid, a
-- bigint, text), so the send log keeps it as text and holds no foreign key into the source:
-- crontick only reads the source. The unique (booking_id, kind) still makes each reminder go out
-- once; the constraint's index is rebuilt by the type change.

alter table {schema}.reminder_sends drop constraint if exists reminder_sends_booking_id_fkey;

-- The idempotency key is generated from booking_id, which cannot change type under it: dropped and
-- generated again, with the same value ('reminder:' || <id as text> || ':' || kind), so a retry of
-- a reminder claimed before this migration still sends the key its first attempt sent.
alter table {schema}.reminder_sends drop column idempotency_key;
alter table {schema}.reminder_sends alter column booking_id type text using booking_id::text;
alter table {schema}.reminder_sends add column idempotency_key text
    generated always as ('reminder:' || booking_id || ':' || kind) stored;

-- crontick's own bookings, read as a source: the claim looks a retried reminder's booking up by its
-- id as text (sql/reminders.sql reminder_claim_due, overdue), as do the admin's reminder pages.
create index bookings_id_text on {schema}.bookings ((id::text));

-- The probe takes the caller's reminder source (sql/functions/tick_probe.sql): the old signature goes.
drop function if exists {schema}.crontick_tick_probe(
    timestamptz, int, interval, text, jsonb, boolean, text[], interval[], interval[], float8, boolean,
    timestamptz, timestamptz, timestamptz);
