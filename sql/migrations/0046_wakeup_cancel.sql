-- 0046: superseded wake-ups are cancelled (issue 35, wake-ups per day). A tick that books instant T marks the
-- bookings it supersedes (booked, not served, between its now and the work's due time) `cancelled` in its claim's
-- statement (sql/functions/wakeup_claim.sql), and asks the provider to delete them. `message_id`: what the
-- provider answered (QStash's cancel needs it). `generation`: a cancelled instant that comes due again is booked
-- under a new key (providers refuse or dedupe a reused one), crontick.wakers.booking.booking_key.
alter table {schema}.crontick_wakeups add column message_id text;
alter table {schema}.crontick_wakeups add column generation int not null default 1;
alter table {schema}.crontick_wakeups drop constraint crontick_wakeups_status_valid;
alter table {schema}.crontick_wakeups add constraint crontick_wakeups_status_valid
    check (status in ('booked', 'failed', 'cancelled'));
drop function if exists {schema}.crontick_wakeup_claim(timestamptz, text, timestamptz);
