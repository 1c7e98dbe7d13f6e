-- 0042: a wake-up's delivery is recorded when it is served (issue 35, bad input and faults). Each delivery
-- carries the instant it was booked for; the tick it starts records `served_at` (crontick_wakeup_claim's
-- `_served`, or the wakeup_served statement), and a second delivery for that instant (a provider's
-- duplicate or retry after the first was served) is answered at once without running the tick again.
-- A previous release ignores the column, and its claim (two arguments) is dropped here: the file
-- sql/functions/wakeup_claim.sql creates the one with `_served` after the migrations.
alter table {schema}.crontick_wakeups add column served_at timestamptz;
drop function if exists {schema}.crontick_wakeup_claim(timestamptz, text);
