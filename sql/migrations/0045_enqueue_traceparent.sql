-- 0045 (with 0041's start_by, the argument before it): the enqueuer's trace context kept by every path that
-- adds jobs (issue 37), not only by Python's crontick.enqueue: the SQL API crontick.enqueue takes `traceparent`
-- (any driver or language passes its own span's), and enqueue_many, job.spawn and the debounced half pass theirs
-- to crontick_job_insert_many, which keeps a valid one (sql/functions/job_insert_many.sql). `create or replace`
-- cannot add an argument, so each old signature goes (lib/crontick/db/migrate.py) and its function file creates
-- the new one.
-- requires: sql/functions/enqueue.sql
--
-- crontick.enqueue is the one a role is granted by name (docs/security.md, "search_path and function
-- privileges"): the new signature, created just before this migration, gets every such grant of the old one
-- before it goes, so an app's enqueuing role keeps enqueuing across the upgrade.
do $$
declare
    _old regprocedure := pg_catalog.to_regprocedure('{schema}.{api_enqueue}(text, jsonb, timestamptz, integer, text, '
        'text, integer, text, double precision, double precision)');
    _new regprocedure := pg_catalog.to_regprocedure('{schema}.{api_enqueue}(text, jsonb, timestamptz, integer, text, '
        'text, integer, text, double precision, double precision, timestamptz, text)');
    _grantee regrole;
begin
    if _old is null then
        return;
    end if;
    for _grantee in
        select distinct a.grantee::regrole
        from pg_catalog.pg_proc p cross join lateral pg_catalog.aclexplode(p.proacl) a
        where p.oid = _old and a.privilege_type = 'EXECUTE' and a.grantee not in (0, p.proowner)
    loop
        execute pg_catalog.format('grant execute on function %s to %s', _new, _grantee);
    end loop;
    execute pg_catalog.format('drop function %s', _old);
end
$$;
drop function if exists {schema}.crontick_job_debounce(text, jsonb, timestamptz, integer, text, text, integer, text,
    double precision, double precision);
drop function if exists {schema}.crontick_job_insert_many(text[], jsonb[], bigint[], timestamptz[], integer[], integer[],
    text[], text[], timestamptz[], text[], text[], timestamptz[]);
drop function if exists {schema}.crontick_job_spawn(bigint, integer, text, text[], jsonb[], timestamptz, integer, integer,
    text);
