-- 0047 (issue 37): the per-type durations (p50/p95 on the admin's overview, crontick_job_duration_seconds_last_hour)
-- count each attempt's own run time, not its batch's (the claim to the record statement): the record statement takes
-- the succeeded attempts' run times as one more array, `_done_ms`, and the other outcomes' as their rows' last
-- element. `create or replace` cannot add an argument, so each old signature goes here (lib/crontick/db/migrate.py)
-- and its function file, applied just before this migration and again after them all, creates the new one. The new
-- argument is last and defaults to null: a previous release's call (10 and 13 arguments) during a rolling deploy
-- resolves to the new function and counts its durations as before.
-- requires: sql/functions/job_record_outcomes.sql
-- requires: sql/functions/job_record_and_claim.sql
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
        array['{schema}.crontick_job_record_outcomes(timestamptz, bigint[], int[], json, boolean, timestamptz, text, '
              'jsonb, jsonb, timestamptz)',
              '{schema}.crontick_job_record_outcomes(timestamptz, bigint[], int[], json, boolean, timestamptz, text, '
              'jsonb, jsonb, timestamptz, double precision[])'],
        array['{schema}.crontick_job_record_and_claim(timestamptz, bigint[], int[], json, boolean, timestamptz, text, '
              'jsonb, jsonb, timestamptz, int, interval, jsonb)',
              '{schema}.crontick_job_record_and_claim(timestamptz, bigint[], int[], json, boolean, timestamptz, text, '
              'jsonb, jsonb, timestamptz, int, interval, jsonb, double precision[])']]
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
