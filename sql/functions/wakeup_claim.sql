-- crontick_wakeup_claim: the one statement a booking adds to a tick, after the provider's call
-- (crontick.wakers.booking.book_next): the call's outcome recorded for `_instant`, under the key of its
-- `_generation`, as its `_attempt`-th call. `_error` null: the provider accepted it (`_message_id`: the id it
-- answered, which a cancel needs); else crontick_wakeup_failed records the failure (and its alert). In the same
-- statement: `_served`, the instant whose delivery started this tick, is recorded as served (a later delivery for
-- it is a duplicate; null: none); `_cancelled` (with `_cancelled_generations`), the superseded bookings this
-- tick's call deleted at the provider alongside its booking (crontick.wakers.ledger picked them from the probe's
-- rows), are marked `cancelled` where they are still that booking; instants more than 30 days past are deleted
-- (a range of the primary key, empty on almost every call).
-- `recorded`: false when a concurrent tick booked the same instant meanwhile (under this key or a later one): this
-- call was a duplicate the provider deduplicated by the key, and the caller counts it `already`. A booking wins
-- over a failure and a later generation over an earlier one; an instant served is never booked again, as the
-- provider's key for it is spent (migration 0042). Concurrent callers serialise on the row.
-- `needed_at`: against an enqueue that committed since the caller's probe, crontick_job_next_at() is read again:
-- when a booking it cancelled was at or after the first pending job's time (and that time is before `_instant`),
-- that time, which the caller books at once (one more call and statement, only in that race); else null.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships; migration 0050).
create or replace function {schema}.crontick_wakeup_claim(
    _instant timestamptz, _provider text, _generation int default 1, _attempt int default 1,
    _message_id text default null, _error text default null, _served timestamptz default null,
    _cancelled timestamptz[] default null, _cancelled_generations int[] default null,
    out recorded boolean, out needed_at timestamptz
)
language plpgsql volatile as $$
declare
    first_due timestamptz;
    last_cancelled timestamptz;
begin
    delete from {schema}.crontick_wakeups w where w.instant < pg_catalog.now() - interval '30 days';
    update {schema}.crontick_wakeups w set served_at = pg_catalog.now()
    where w.instant = _served and w.served_at is null;
    if pg_catalog.cardinality(_cancelled) > 0 then
        with c as (
            update {schema}.crontick_wakeups w set status = 'cancelled'
            from rows from (pg_catalog.unnest(_cancelled), pg_catalog.unnest(_cancelled_generations)) c(instant, generation)
            where w.instant = c.instant and w.generation = c.generation and w.status = 'booked' and w.served_at is null
            returning w.instant
        )
        select pg_catalog.max(c.instant) into last_cancelled from c;
        first_due := {schema}.crontick_job_next_at();
        if first_due < _instant and first_due <= last_cancelled then
            needed_at := first_due;
        end if;
    end if;
    if _error is not null then
        recorded := {schema}.crontick_wakeup_failed(_instant, _provider, _generation, _attempt, _error);
        return;
    end if;
    insert into {schema}.crontick_wakeups as w (instant, provider, attempts, generation, message_id)
    values (_instant, _provider, _attempt, _generation, _message_id)
    on conflict (instant) do update
        set status = 'booked', provider = excluded.provider, attempts = excluded.attempts,
            generation = excluded.generation, message_id = excluded.message_id, booked_at = pg_catalog.now()
        where w.served_at is null
          and (w.generation < excluded.generation or (w.generation = excluded.generation and w.status = 'failed'))
    returning true into recorded;
    recorded := coalesce(recorded, false);
end
$$;
