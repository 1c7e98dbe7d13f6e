-- 0050 (issue 35): a wake-up booking costs a tick one statement, not two. The provider is called first, from what
-- the probe already read (crontick.wakers.ledger), and then one statement records the outcome: crontick_wakeup_claim
-- takes the booking's generation, attempt, message id (or error), the delivered instant and the superseded bookings
-- the call cancelled, and crontick_wakeup_failed makes the row when there is none. `create or replace` cannot change
-- arguments or a result type, so each old signature goes here (lib/crontick/db/migrate.py) and its function file,
-- applied just before this migration and again after them all, creates the new one. A previous release during a
-- rolling deploy then fails its booking calls (logged, counted, and the next tick or the safety net books again).
-- requires: sql/functions/wakeup_failed.sql
-- requires: sql/functions/wakeup_claim.sql
--
-- A role granted either function by name (a tick run under a role of its own) keeps it: the new signature gets every
-- such grant of the old one before the old one goes, as in migration 0045.
do $$
declare
    _pair text[];
    _old regprocedure;
    _new regprocedure;
    _grantee regrole;
begin
    foreach _pair slice 1 in array array[
        array['{schema}.crontick_wakeup_claim(timestamptz, text, timestamptz, timestamptz, timestamptz, int)',
              '{schema}.crontick_wakeup_claim(timestamptz, text, int, int, text, text, timestamptz, timestamptz[], '
              'int[])'],
        array['{schema}.crontick_wakeup_failed(timestamptz, text)',
              '{schema}.crontick_wakeup_failed(timestamptz, text, int, int, text)']]
    loop
        _old := pg_catalog.to_regprocedure(_pair[1]);
        _new := pg_catalog.to_regprocedure(_pair[2]);
        continue when _old is null;
        for _grantee in
            select distinct a.grantee::regrole
            from pg_catalog.pg_proc p cross join lateral pg_catalog.aclexplode(p.proacl) a
            where p.oid = _old and a.privilege_type = 'EXECUTE' and a.grantee not in (0, p.proowner)
        loop
            execute pg_catalog.format('grant execute on function %s to %s', _new, _grantee);
        end loop;
        execute pg_catalog.format('drop function %s', _old);
    end loop;
end
$$;
