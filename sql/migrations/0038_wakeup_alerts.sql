-- 0038: an alert after repeated failed bookings of a wake-up (issue 35, crontick.wakers): the outbox takes the
-- event `wakeup_failed`, raised by sql/functions/wakeup_failed.sql. A previous release writes only the events
-- before it, which all fit.
alter table {schema}.crontick_alerts drop constraint crontick_alerts_event_valid,
    add constraint crontick_alerts_event_valid
        check (event in ('job_failed', 'reminder_failed', 'reminder_unknown', 'scheduler_silent', 'wakeup_failed'));
