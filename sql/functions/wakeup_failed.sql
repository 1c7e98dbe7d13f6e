-- crontick_wakeup_failed: the provider call of a claimed instant failed (crontick.wakers.booking):
-- the row says so, with the error, and the next tick's crontick_wakeup_claim takes it again.
-- Repeated failures raise an alert (crontick.tick.alerts, event `wakeup_failed`, migration 0038) in
-- the same call, so a failure costs the tick no statement more: once 3 or more calls have failed
-- within the last hour (of this instant or others), at most one alert an hour (its occurred_at is
-- the hour, under crontick_alerts_once). The tick's alerts duty, after the wake-ups', sends it: it is
-- due from its hour on (next_attempt_at), not from now, as that tick claims alerts due by its own time,
-- from before this call.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_wakeup_failed(_instant timestamptz, _error text) returns void
language sql volatile as $$
    update {schema}.crontick_wakeups w
    set status = 'failed', failed_at = pg_catalog.now(), error = pg_catalog.left(_error, 2000)
    where w.instant = _instant;
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
$$;
