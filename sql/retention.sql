-- Named queries for retention, loaded once by crontick.db. Each block: who runs it and why.

-- name: retention_delete
-- crontick.tick.retention.run, in a tick whose record statement said some row is past its keep
-- period: delete at most `limit` expired rows from each table, oldest first, in one statement.
-- Each batch is found through an index on its age, so a backlog of a million costs what a
-- batch costs. SKIP LOCKED: a row someone is changing (an admin retry) is left for later.
-- Never deleted: pending or running jobs (only 'done', 'failed' and 'cancelled' are
-- candidates; cancelled ones are kept as long as failed ones), a reminder send still 'sending' or
-- with a retry due, and one whose booking starts after kept_before (its unique (booking_id, kind)
-- row is what stops a second reminder; a booking that started a month ago cannot be reminded
-- again). Admin audit rows go after audit_before, inbound events (the hooks' dedupe) after
-- inbound_before. Tables this file does not name (schedule slots, used jtis) are untouched.
with done_jobs as (
    delete from {schema}.jobs j where j.id = any(array(
        select id from {schema}.jobs
        where status = 'done' and updated_at < %(done_before)s
        order by updated_at
        limit %(limit)s
        for update skip locked))
    returning 1
), failed_jobs as (
    delete from {schema}.jobs j where j.id = any(array(
        select id from {schema}.jobs
        where status = 'failed' and updated_at < %(failed_before)s
        order by updated_at
        limit %(limit)s
        for update skip locked))
    returning 1
), cancelled_jobs as (
    delete from {schema}.jobs j where j.id = any(array(
        select id from {schema}.jobs
        where status = 'cancelled' and updated_at < %(failed_before)s
        order by updated_at
        limit %(limit)s
        for update skip locked))
    returning 1
), ticks as (
    delete from {schema}.crontick_ticks where id = any(array(
        select id from {schema}.crontick_ticks
        where finished_at < %(kept_before)s
        order by finished_at
        limit %(limit)s
        for update skip locked))
    returning 1
), alerts as (
    delete from {schema}.crontick_alerts where id = any(array(
        select id from {schema}.crontick_alerts
        where updated_at < %(kept_before)s
        order by updated_at
        limit %(limit)s
        for update skip locked))
    returning 1
), reminder_sends_done as (
    delete from {schema}.reminder_sends where id = any(array(
        -- The booking from the reminder source (only read: `for update of r`), by its id as text; a
        -- booking gone from the source cannot be reminded again either.
        select r.id from {schema}.reminder_sends r
        left join {reminder_source} b on b.id::text = r.booking_id
        where r.status <> 'sending' and r.next_attempt_at is null and r.updated_at < %(kept_before)s
          and (b.starts_at < %(kept_before)s or b.id is null)
        order by r.updated_at
        limit %(limit)s
        for update of r skip locked))
    returning 1
), audit as (
    delete from {schema}.admin_audit where id = any(array(
        select id from {schema}.admin_audit
        where at < %(audit_before)s
        order by at
        limit %(limit)s
        for update skip locked))
    returning 1
), inbound_events as (
    -- No id column (the key is (hook, event_id)): the locked rows' ctids, which cannot move while
    -- this statement holds their locks, make the delete a TID scan whatever the statistics say.
    delete from {schema}.crontick_inbound_events where ctid = any(array(
        select ctid from {schema}.crontick_inbound_events
        where received_at < %(inbound_before)s
        order by received_at
        limit %(limit)s
        for update skip locked))
    returning 1
), signals as (
    -- Durable steps (issue 21): signals kept for a wait that never began, past signals_before
    -- (crontick.workflows.steps.SIGNAL_KEEP_DAYS); a data-modifying CTE runs even though nothing
    -- reads it, so the counts below stay as they were.
    delete from {schema}.crontick_signals where id = any(array(
        select id from {schema}.crontick_signals
        where created_at < %(signals_before)s
        order by created_at
        limit %(limit)s
        for update skip locked))
)
select (select count(*) from done_jobs) as done_jobs,
    (select count(*) from failed_jobs) as failed_jobs,
    (select count(*) from ticks) as ticks,
    (select count(*) from alerts) as alerts,
    (select count(*) from reminder_sends_done) as reminder_sends,
    (select count(*) from cancelled_jobs) as cancelled_jobs,
    (select count(*) from audit) as audit,
    (select count(*) from inbound_events) as inbound_events;

-- name: retention_statement_timeout
-- crontick.tick.retention.run, first in its transaction: the delete may use only what is left of
-- the tick's budget (transaction-scoped, so safe behind a transaction pooler).
select pg_catalog.set_config('statement_timeout', %(ms)s::text, true);
