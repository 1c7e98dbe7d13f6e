-- crontick_wakeup_claim: take the booking of `_instant` for this caller, exactly once across
-- concurrent ticks (crontick.wakers.booking.book_next). Its one row: `attempt`, which call this is (1 for a
-- new instant): call the provider now; 0: the instant is booked already (or another tick is booking
-- it right now). An instant whose last call failed is taken again, `attempts` + 1 (the caller alerts
-- on repeated failures from it); its last failure (`failed_at`, `error`) is kept for the admin. The row says `booked` from here on, so a booking that
-- succeeds costs the tick this one statement; crontick_wakeup_failed records a call that failed. A
-- process frozen mid-call leaves its instant `booked` with nothing booked: the safety-net schedule
-- and health's grace cover it. Concurrent callers serialise on the row: the loser re-reads it under
-- `on conflict ... where` and gets no row back. Instants more than 30 days past are deleted here (a
-- range of the primary key, empty on almost every call). `_served`: the instant whose delivery started this
-- tick, recorded as served in the same call (a later delivery for it is a duplicate; null: none); an
-- instant served is never taken again, as the provider's key for it is spent (migration 0042).
-- Superseded bookings (migration 0046): once this call takes `_instant`, up to `_cancel_limit` bookings of
-- the same provider, booked and not served, with `_now` < instant < `_cancel_before` (the work's due time: the
-- caller's probe found nothing due before it) are marked `cancelled`, and returned (`cancelled`, their
-- `generations` and `message_ids`) for the caller to delete at the provider. Against an enqueue that committed
-- since the probe, crontick_job_next_at() is read again here: no booking at or after the first pending job's
-- time is cancelled (the duties' times, reminders and schedules, are the probe's). A cancelled instant taken
-- again is a new `generation`, booked under a new key.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_wakeup_claim(
    _instant timestamptz, _provider text, _served timestamptz default null, _now timestamptz default null,
    _cancel_before timestamptz default null, _cancel_limit int default 0,
    out attempt int, out generation int, out cancelled timestamptz[], out generations int[], out message_ids text[]
)
language plpgsql volatile as $$
declare
    before timestamptz;
begin
    delete from {schema}.crontick_wakeups w where w.instant < pg_catalog.now() - interval '30 days';
    update {schema}.crontick_wakeups w set served_at = pg_catalog.now()
    where w.instant = _served and w.served_at is null;
    insert into {schema}.crontick_wakeups as w (instant, provider)
    values (_instant, _provider)
    on conflict (instant) do update
        set status = 'booked', provider = excluded.provider,
            attempts = case when w.status = 'cancelled' then 1 else w.attempts + 1 end,
            generation = case when w.status = 'cancelled' then w.generation + 1 else w.generation end,
            message_id = null, booked_at = pg_catalog.now()
        where w.status in ('failed', 'cancelled') and w.served_at is null
    returning w.attempts, w.generation into attempt, generation;
    attempt := coalesce(attempt, 0);
    if attempt = 0 or _cancel_limit <= 0 or _cancel_before is null then
        return;
    end if;
    before := least(_cancel_before, _instant, coalesce({schema}.crontick_job_next_at(), _cancel_before));
    with s as (
        select w.instant from {schema}.crontick_wakeups w
        where w.instant > coalesce(_now, pg_catalog.now()) and w.instant < before
          and w.status = 'booked' and w.served_at is null and w.provider = _provider
        order by w.instant limit _cancel_limit
        for update skip locked
    ), c as (
        update {schema}.crontick_wakeups w set status = 'cancelled'
        from s where w.instant = s.instant
        returning w.instant, w.generation, w.message_id
    )
    select pg_catalog.array_agg(c.instant order by c.instant), pg_catalog.array_agg(c.generation order by c.instant),
           pg_catalog.array_agg(c.message_id order by c.instant)
    into cancelled, generations, message_ids
    from c;
end
$$;
