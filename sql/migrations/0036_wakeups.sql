-- 0036: precise wake-ups (issue 35). With CRONTICK_WAKER set, a tick books this app's next tick at the
-- instant work comes due, through the provider's one-time delayed delivery (crontick.wakers). One row
-- per instant: its primary key is what makes concurrent ticks book an instant once
-- (sql/functions/wakeup_claim.sql). A row is `booked` from the claim on, so a booking that succeeds
-- adds one statement to a tick; `failed` when the provider refused or did not answer
-- (sql/functions/wakeup_failed.sql), and the next tick's claim takes that instant again (`attempts`
-- counts the calls). Rows of instants past 30 days are pruned by the claim itself.
create table {schema}.crontick_wakeups (
    instant   timestamptz not null primary key,
    provider  text        not null,
    status    text        not null default 'booked',
    attempts  int         not null default 1,
    booked_at timestamptz not null default pg_catalog.now(),  -- the last call's start, by the database's clock
    failed_at timestamptz,                                    -- the last failed call (kept once booked again)
    error     text,
    constraint crontick_wakeups_status_valid check (status in ('booked', 'failed')),
    constraint crontick_wakeups_error_short check (octet_length(error) <= 2000)
);
alter table {schema}.crontick_wakeups enable row level security;
-- Health and the admin read the last failure (sql/wakeups.sql wakeup_status).
create index crontick_wakeups_failed on {schema}.crontick_wakeups (failed_at) where failed_at is not null;
