-- Named queries, loaded once by crontick.db. Each block: who runs it and why.
-- Parameters are named (%(name)s); nothing here is ever built with string formatting.

-- name: job_insert
-- crontick.enqueue: one job inside the caller's transaction, through the SQL API every other
-- driver and language uses (sql/functions/enqueue.sql). With a key, an active job holding that
-- key wins and its id is returned instead (see jobs_key_active); with a debounce key, the job that
-- has not started takes this payload instead (sql/functions/job_debounce.sql). Named arguments, so
-- psycopg2 and psycopg 3 pass the same statement; the casts fix the types whatever a driver sends.
-- start_by given in seconds counts from the database's clock, as run_after's defaults do.
select {schema}.{api_enqueue}(type => %(type)s, payload => %(payload)s, run_after => %(run_after)s::timestamptz,
    max_attempts => %(max_attempts)s::int, key => %(key)s::text, group_key => %(group_key)s::text,
    priority => %(priority)s::int, debounce_key => %(debounce_key)s::text,
    debounce_seconds => %(debounce_seconds)s::float8, debounce_max_seconds => %(debounce_max_seconds)s::float8,
    start_by => coalesce(%(start_by)s::timestamptz,
                         pg_catalog.now() + pg_catalog.make_interval(secs => %(start_by_seconds)s::float8)),
    traceparent => %(traceparent)s::text);

-- name: job_insert_many
-- crontick.enqueue_many: a whole list of jobs in one statement. The list arrives as one JSON
-- array of [type, payload] pairs (cheaper to send than one array per column) and becomes the
-- columns of crontick_job_insert_many (sql/functions/job_insert_many.sql), which inserts the rows
-- in list order, so the returned ids follow it, and gives a null its default. `priorities` maps a
-- type to its handler's declared priority, for jobs enqueued without one; `attempts` likewise its
-- declared max_attempts. An option not given is
-- passed as no array at all, not as N nulls: each array the function reads is one more 10,000-row
-- scan (about 5 % of enqueue_many's time for the three options).
select i.id
from (
    select pg_catalog.array_agg(e.job ->> 0 order by e.n) as types, pg_catalog.array_agg(e.job -> 1 order by e.n) as payloads,
        pg_catalog.array_agg(coalesce(%(priority)s::int, (%(priorities)s::jsonb ->> (e.job ->> 0))::int) order by e.n) as priorities,
        pg_catalog.array_agg(coalesce(%(max_attempts)s::int, (%(attempts)s::jsonb ->> (e.job ->> 0))::int) order by e.n) as max_attempts,
        pg_catalog.count(*)::int as n
    from pg_catalog.jsonb_array_elements(%(jobs)s::jsonb) with ordinality as e(job, n)
) a
cross join lateral {schema}.crontick_job_insert_many(a.types, a.payloads,
    _run_after => case when %(run_after)s::timestamptz is not null then pg_catalog.array_fill(%(run_after)s::timestamptz, array[a.n]) end,
    _max_attempts => case when %(max_attempts)s::int is not null or %(attempts)s::jsonb <> '{{}}'::jsonb then a.max_attempts end,
    _group_keys => case when %(group_key)s::text is not null then pg_catalog.array_fill(%(group_key)s::text, array[a.n]) end,
    _priorities => case when %(priority)s::int is not null or %(priorities)s::jsonb <> '{{}}'::jsonb then a.priorities end,
    _start_by => case when %(start_by)s::timestamptz is not null or %(start_by_seconds)s::float8 is not null
        then pg_catalog.array_fill(coalesce(%(start_by)s::timestamptz,
            pg_catalog.now() + pg_catalog.make_interval(secs => %(start_by_seconds)s::float8)), array[a.n]) end,
    _traceparents => case when %(traceparent)s::text is not null then pg_catalog.array_fill(%(traceparent)s::text, array[a.n]) end) i(id);

-- name: job_insert_many_keyed
-- crontick.enqueue_many when some job of the list has a key ([type, payload, key]): as
-- job_insert_many, one statement, with each row's id drawn first (in list order), so that a row the
-- function skips (its key held by an active job) is known. Each row answers its own id when inserted,
-- else the id of an earlier row of the list with its key that was, else the active holder's (as
-- crontick.enqueue answers). Null: the holder committed after this statement began, unseen by it
-- (crontick.enqueue_many runs those rows again).
with e as materialized (
    select d.job, d.n, pg_catalog.nextval(pg_catalog.pg_get_serial_sequence(pg_catalog.quote_ident({schema_name}) || '.jobs', 'id')) as id
    from (select x.job, x.n from pg_catalog.jsonb_array_elements(%(jobs)s::jsonb) with ordinality as x(job, n) order by x.n) d
), a as materialized (
    select pg_catalog.array_agg(e.job ->> 0 order by e.n) as types, pg_catalog.array_agg(e.job -> 1 order by e.n) as payloads,
        pg_catalog.array_agg(e.id order by e.n) as ids, pg_catalog.array_agg(e.job ->> 2 order by e.n) as keys,
        pg_catalog.array_agg(coalesce(%(priority)s::int, (%(priorities)s::jsonb ->> (e.job ->> 0))::int, 0) order by e.n) as priorities,
        pg_catalog.array_agg(coalesce(%(max_attempts)s::int, (%(attempts)s::jsonb ->> (e.job ->> 0))::int) order by e.n) as max_attempts,
        pg_catalog.count(*)::int as n
    from e
), inserted as materialized (
    select i.id
    from a cross join lateral {schema}.crontick_job_insert_many(a.types, a.payloads, _ids => a.ids, _keys => a.keys,
        _run_after => case when %(run_after)s::timestamptz is not null then pg_catalog.array_fill(%(run_after)s::timestamptz, array[a.n]) end,
        _max_attempts => a.max_attempts, _priorities => a.priorities,
        _group_keys => case when %(group_key)s::text is not null then pg_catalog.array_fill(%(group_key)s::text, array[a.n]) end,
        _start_by => case when %(start_by)s::timestamptz is not null or %(start_by_seconds)s::float8 is not null
            then pg_catalog.array_fill(coalesce(%(start_by)s::timestamptz,
                pg_catalog.now() + pg_catalog.make_interval(secs => %(start_by_seconds)s::float8)), array[a.n]) end,
        _traceparents => case when %(traceparent)s::text is not null then pg_catalog.array_fill(%(traceparent)s::text, array[a.n]) end) i(id)
)
select coalesce(
    (select x.id from inserted x where x.id = e.id),
    (select f.id from e f join inserted x on x.id = f.id
     where f.job ->> 2 = e.job ->> 2 and f.n < e.n order by f.n limit 1),
    (select j.id from {schema}.jobs j
     where j.key = e.job ->> 2 and j.status in ('pending', 'running', 'waiting') limit 1)
) as id
from e
order by e.n;

-- name: job_rescue_expired
-- Tick, when the claim saw an expired lease: jobs whose lease passed while running belong to
-- a tick that died.
-- Back to pending if attempts remain, else failed. SKIP LOCKED keeps parallel rescuers apart.
with expired as materialized (
    select id, coalesce(started_at, updated_at) as started_at, locked_until from {schema}.jobs
    where status = 'running' and locked_until < %(now)s
    order by locked_until
    limit %(limit)s
    for update skip locked
), rescued as (
    update {schema}.jobs j set
        status = case when j.attempts >= j.max_attempts then 'failed' else 'pending' end,
        run_after = %(now)s,
        locked_until = null,
        finished_at = case when j.attempts >= j.max_attempts then %(now)s end,
        last_error = 'LeaseExpired: attempt ' || j.attempts::text || ' of ' || j.max_attempts::text
            || ' was still running when its lease ended at ' || j.locked_until::text
            || ' (the tick running it was stopped before it could record an outcome)',
        updated_at = %(now)s
    from expired where j.id = expired.id
    returning j.id, j.type, j.status, j.attempts, j.last_error, expired.started_at, expired.locked_until
), alerted as (
    -- crontick.tick.alerts: a job failed here for good raises its job_failed alert in this statement (an outbox).
    insert into {schema}.crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'job_failed', 'job:' || r.id::text, %(now)s,
        pg_catalog.jsonb_build_object('job_id', r.id, 'job_type', r.type, 'attempts', r.attempts, 'error', pg_catalog.left(r.last_error, 500)),
        %(now)s, %(now)s, %(now)s
    from rescued r
    where r.status = 'failed'
    on conflict on constraint crontick_alerts_once do nothing
), attempt_log as (
    -- The attempts history: the attempt whose lease ran out, ended when its lease did.
    insert into {schema}.job_attempts (job_id, attempt, started_at, finished_at, outcome, error)
    select id, attempts, started_at, locked_until, 'lease_expired', pg_catalog.left(last_error, 4096)
    from rescued
)
select count(*) filter (where status = 'pending') as retried,
       count(*) filter (where status = 'failed') as failed
from rescued;

-- name: job_claim_due
-- Tick: claim up to a batch of due jobs and lease them in one statement, and say whether some
-- running job's lease has passed (then the tick rescues and claims again: checking here spares
-- every tick a rescue statement). Run by a drain's batches after the first and by the claim
-- after a rescue; the probe (tick_probe) claims with the same function. The statement itself is
-- the function in sql/functions/job_claim_due.sql (its comment says why a function: a plan kept
-- per connection, without prepared statements). `now` null: the database's clock, returned for
-- the rest of the tick. `flow`: flow control's claim arguments (crontick.flow.claim_args).
select jobs, leases_expired, now, throttled_until, expired
from {schema}.crontick_job_claim_due(%(now)s::timestamptz, %(limit)s::int, %(lease)s::interval, %(flow)s::jsonb);

-- name: job_record_outcomes
-- Tick, last step: every outcome of the batch and the tick's log row, in one statement (one
-- round trip, one commit); crontick.tick.record.record_outcomes runs it without the log row.
-- Fenced on status and the claimed attempt; alerts and the attempts history written in the
-- same statement. The statement itself is the function in sql/functions/job_record_outcomes.sql
-- (its comment says why a function: a plan cached per connection, without prepared statements).
-- jobs_due tells the tick whether to answer more: true. /api/health reads the log.
select written, succeeded, retried, failed, released, fenced, jobs_due, next_job_at, snoozed, alerts_due
from {schema}.crontick_job_record_outcomes(
    %(now)s::timestamptz, %(done_ids)s::bigint[], %(done_attempts)s::int[], %(others)s::json, %(log)s::boolean,
    %(started_at)s::timestamptz, %(source)s::text, %(summary)s::jsonb, %(jobs)s::jsonb, %(next_other_at)s::timestamptz,
    %(done_ms)s::double precision[]);

-- name: job_record_and_claim
-- crontick tick --drain, a tick whose next one would claim straight away: job_record_outcomes,
-- then job_claim_due for the next batch, in one round trip and one transaction (one commit, not
-- two). The function is in sql/functions/job_record_and_claim.sql; the record goes first.
select written, succeeded, retried, failed, released, fenced, jobs_due, next_job_at, snoozed, alerts_due,
    next_jobs, leases_expired, next_now, throttled_until, expired
from {schema}.crontick_job_record_and_claim(
    %(now)s::timestamptz, %(done_ids)s::bigint[], %(done_attempts)s::int[], %(others)s::json, %(log)s::boolean,
    %(started_at)s::timestamptz, %(source)s::text, %(summary)s::jsonb, %(jobs)s::jsonb, %(next_other_at)s::timestamptz,
    %(limit)s::int, %(lease)s::interval, %(flow)s::jsonb, %(done_ms)s::double precision[]);

-- name: tick_probe
-- Tick, first statement (crontick.tick.probe.look): claim the due jobs (as job_claim_due does, with
-- the same function), find out whether anything else is due and when the next thing falls due,
-- and, when nothing is due, write the tick's log row: an idle tick is one round trip. The
-- statement itself is the function in sql/functions/tick_probe.sql, whose plan each
-- connection keeps (compiling the 4 KB statement on every tick cost five times what running it
-- did). `now` null: the database's clock, returned as `now` for the rest of the tick. `asks`: each
-- duty's parameters under its name; `duties`: each duty's answer under its name (crontick.tick.duties).
select idle, jobs, now, next_job_at, throttled_until, duties, expired
from {schema}.crontick_tick_probe(
    %(now)s::timestamptz, %(limit)s::int, %(lease)s::interval, %(source)s::text, %(summary)s::jsonb,
    %(reminder_source)s::text, %(flow)s::jsonb, %(asks)s::jsonb);
