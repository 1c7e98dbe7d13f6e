-- What every function crontick defines gets, applied by `crontick migrate` after all of sql/functions/
-- (every migrate, in the same transaction), so that a new function file cannot forget it
-- (tests/security/test_search_path.py lists the functions of a fresh migrate and checks both):
-- * `search_path = pg_catalog, pg_temp`. A body that names a built-in unqualified (`now()`,
--   `hashtextextended(text, 0)`, `bigint % 1500`) then finds pg_catalog's and nothing else: a role that
--   may create in `public` cannot plant a better-matching function or operator there and have it run
--   as crontick's role. crontick's own names are qualified with its schema everywhere. `create or
--   replace` drops a function's settings, which is why this runs after the function files, every time.
-- * No EXECUTE for PUBLIC, nor for the roles that default privileges grant new functions to (Supabase
--   grants every function created in `public` to `anon` and `authenticated`): the owner, crontick's own
--   role, calls them; another role is granted what it needs by name (docs/security.md, "search_path
--   and function privileges"), and such a grant is kept. Under CRONTICK_SCHEMA=public, crontick's
--   functions are the ones named crontick_*.
do $$
declare
    _fn regprocedure;
    _grantee regrole;
begin
    for _fn in
        select p.oid::regprocedure from pg_catalog.pg_proc p
        where p.pronamespace = {schema_name}::regnamespace
          and ({schema_name} <> 'public' or p.proname like 'crontick\_%')
    loop
        execute pg_catalog.format('alter function %s set search_path = pg_catalog, pg_temp', _fn);
        execute pg_catalog.format('revoke execute on function %s from public', _fn);
        for _grantee in
            select distinct a.grantee::regrole
            from pg_catalog.pg_proc p
            join pg_catalog.pg_default_acl d
                on d.defaclrole = p.proowner and d.defaclobjtype = 'f' and d.defaclnamespace in (0, p.pronamespace)
            cross join lateral pg_catalog.aclexplode(d.defaclacl) a
            where p.oid = _fn and a.grantee not in (0, p.proowner)
        loop
            execute pg_catalog.format('revoke execute on function %s from %s', _fn, _grantee);
        end loop;
    end loop;
end
$$
