-- crontick_wakeup_failed: the provider call of a claimed instant failed (crontick.wakers.booking):
-- the row says so, with the error, and the next tick's crontick_wakeup_claim takes it again.
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_wakeup_failed(_instant timestamptz, _error text) returns void
language sql volatile as $$
    update {schema}.crontick_wakeups w
    set status = 'failed', failed_at = pg_catalog.now(), error = pg_catalog.left(_error, 2000)
    where w.instant = _instant
$$;
