-- crontick_wakeup_ledger: the bookings of crontick_wakeups from `_from` on, the first `_limit` by instant, as a
-- jsonb array of objects (instant, provider, status, generation, attempts, message_id, served). What a tick books
-- from without a statement of its own (crontick.wakers.ledger decides from it): the probe returns it when the
-- wake-ups duty asks (sql/functions/tick_probe.sql, only with a waker set), and sql/wakeups.sql wakeup_ledger reads
-- it with the database's clock for a caller without a probe (a kick's booking, a drain's later batches). The first
-- entries of the primary key: the same few rows read whatever the table holds.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_wakeup_ledger(_from timestamptz, _limit int) returns jsonb
language sql stable as $$
    select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
        'instant'::text, w.instant, 'provider'::text, w.provider, 'status'::text, w.status,
        'generation'::text, w.generation, 'attempts'::text, w.attempts, 'message_id'::text, w.message_id,
        'served'::text, w.served_at is not null) order by w.instant), '[]'::jsonb)
    from (select * from {schema}.crontick_wakeups w where w.instant >= _from order by w.instant limit _limit) w;
$$;
