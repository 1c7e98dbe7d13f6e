-- Named queries for retention, loaded once by crontick.db. Each block: who runs it and why.

-- name: retention_delete
-- crontick.retention.run, in a tick whose record statement said some row is past its keep
-- period: delete at most `limit` expired rows from each table, oldest first, in one statement.
-- Each batch is found through an index on its age, so a backlog of a million costs what a
-- batch costs. SKIP LOCKED: a row someone is changing (an admin retry) is left for later.
-- Never deleted: pending or running jobs (only 'done' and 'failed' are candidates), a reminder
-- send still 'sending' or with a retry due, and one whose booking starts after kept_before (its
-- unique (booking_id, kind) row is what stops a second reminder; a booking that started a month
-- ago cannot be reminded again). Tables this file does not name (schedule slots) are untouched.
with done_jobs as (
    delete from jobs j where j.id = any(array(
        select id from jobs
        where status = 'done' and updated_at < %(done_before)s
        order by updated_at
        limit %(limit)s
        for update skip locked))
    returning 1
), failed_jobs as (
    delete from jobs j where j.id = any(array(
        select id from jobs
        where status = 'failed' and updated_at < %(failed_before)s
        order by updated_at
        limit %(limit)s
        for update skip locked))
    returning 1
), ticks as (
    delete from crontick_ticks where id = any(array(
        select id from crontick_ticks
        where finished_at < %(kept_before)s
        order by finished_at
        limit %(limit)s
        for update skip locked))
    returning 1
), alerts as (
    delete from crontick_alerts where id = any(array(
        select id from crontick_alerts
        where updated_at < %(kept_before)s
        order by updated_at
        limit %(limit)s
        for update skip locked))
    returning 1
), reminder_sends_done as (
    delete from reminder_sends where id = any(array(
        select r.id from reminder_sends r
        join bookings b on b.id = r.booking_id
        where r.status <> 'sending' and r.next_attempt_at is null and r.updated_at < %(kept_before)s
          and b.starts_at < %(kept_before)s
        order by r.updated_at
        limit %(limit)s
        for update of r skip locked))
    returning 1
)
select (select count(*) from done_jobs) as done_jobs,
    (select count(*) from failed_jobs) as failed_jobs,
    (select count(*) from ticks) as ticks,
    (select count(*) from alerts) as alerts,
    (select count(*) from reminder_sends_done) as reminder_sends;

-- name: retention_statement_timeout
-- crontick.retention.run, first in its transaction: the delete may use only what is left of
-- the tick's budget (transaction-scoped, so safe behind a transaction pooler).
select set_config('statement_timeout', %(ms)s::text, true);
