-- crontick_wakeup_claim: take the booking of `_instant` for this caller, exactly once across
-- concurrent ticks (crontick.wakers.booking.book_next). It returns the attempt this call is (1 for a
-- new instant): call the provider now. 0: the instant is booked already (or another tick is booking
-- it right now). An instant whose last call failed is taken again, `attempts` + 1 (the caller alerts
-- on repeated failures from it); its last failure (`failed_at`, `error`) is kept for the admin. The row says `booked` from here on, so a booking that
-- succeeds costs the tick this one statement; crontick_wakeup_failed records a call that failed. A
-- process frozen mid-call leaves its instant `booked` with nothing booked: the safety-net schedule
-- and health's grace cover it. Concurrent callers serialise on the row: the loser re-reads it under
-- `on conflict ... where` and gets no row back. Instants more than 30 days past are deleted here (a
-- range of the primary key, empty on almost every call). `_served`: the instant whose delivery started this
-- tick, recorded as served in the same call (a later delivery for it is a duplicate; null: none); an
-- instant served is never taken again, as the provider's key for it is spent (migration 0042).
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_wakeup_claim(
    _instant timestamptz, _provider text, _served timestamptz default null
)
returns int
language plpgsql volatile as $$
declare
    taken int;
begin
    delete from {schema}.crontick_wakeups w where w.instant < pg_catalog.now() - interval '30 days';
    update {schema}.crontick_wakeups w set served_at = pg_catalog.now()
    where w.instant = _served and w.served_at is null;
    insert into {schema}.crontick_wakeups as w (instant, provider)
    values (_instant, _provider)
    on conflict (instant) do update
        set status = 'booked', provider = excluded.provider, attempts = w.attempts + 1,
            booked_at = pg_catalog.now()
        where w.status = 'failed' and w.served_at is null
    returning w.attempts into taken;
    return coalesce(taken, 0);
end
$$;
