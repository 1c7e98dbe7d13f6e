-- crontick_wakeup_failed: the provider call of `_instant` (its `_attempt`-th, under the key of `_generation`)
-- failed (crontick_wakeup_claim calls it with the error, crontick.wakers.booking): the row says so, with the error,
-- made if there is none (the provider is called before anything is recorded), and the next tick calls again. False,
-- and nothing written, when a concurrent tick booked the instant meanwhile (under this key or a later one: its
-- booking stands, and the caller counts `already`), or it was served or cancelled since (as crontick_wakeup_claim's
-- booking, which wins over a failure).
-- Repeated failures raise an alert (crontick.tick.alerts, event `wakeup_failed`, migration 0038) in
-- the same call, so a failure costs the tick no statement more: once 3 or more calls have failed
-- within the last hour (of this instant or others), at most one alert an hour (its occurred_at is
-- the hour, under crontick_alerts_once). The tick's alerts duty, after the wake-ups', sends it: it is
-- due from its hour on (next_attempt_at), not from now, as that tick claims alerts due by its own time,
-- from before this call.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships; migration 0050).
create or replace function {schema}.crontick_wakeup_failed(
    _instant timestamptz, _provider text, _generation int, _attempt int, _error text
) returns boolean
language plpgsql volatile as $$
declare
    recorded boolean;
begin
    insert into {schema}.crontick_wakeups as w (instant, provider, status, attempts, generation, failed_at, error)
    values (_instant, _provider, 'failed', _attempt, _generation, pg_catalog.now(), pg_catalog.left(_error, 2000))
    on conflict (instant) do update
        set status = 'failed', provider = excluded.provider, attempts = excluded.attempts,
            generation = excluded.generation, message_id = null, failed_at = excluded.failed_at, error = excluded.error
        where w.served_at is null
          and (w.generation < excluded.generation or (w.generation = excluded.generation and w.status = 'failed'))
    returning true into recorded;
    if recorded is null then
        return false;
    end if;
    insert into {schema}.crontick_alerts (event, subject, occurred_at, body, next_attempt_at, created_at, updated_at)
    select 'wakeup_failed', 'wakeups', pg_catalog.date_trunc('hour'::text, pg_catalog.now()),
        pg_catalog.jsonb_build_object('failures'::text, f.n, 'instant'::text, _instant,
                                      'error'::text, pg_catalog.left(_error, 500)),
        pg_catalog.date_trunc('hour'::text, pg_catalog.now()), pg_catalog.now(), pg_catalog.now()
    -- The failed calls: every call of an instant still `failed`, all but the last (which succeeded) of one booked since.
    from (select pg_catalog.sum(case when w.status = 'failed' then w.attempts else w.attempts - 1 end) as n
          from {schema}.crontick_wakeups w where w.failed_at > pg_catalog.now() - interval '1 hour') f
    where f.n >= 3
    on conflict on constraint crontick_alerts_once do nothing;
    return true;
end
$$;
