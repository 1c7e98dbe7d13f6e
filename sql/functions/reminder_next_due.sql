-- crontick_reminder_next_due: when the first reminder not yet claimed falls due, per kind, read from
-- the reminder source ({reminder_source}). Called by the tick's probe (sql/functions/tick_probe.sql)
-- only while this process's source is the one crontick migrate built it for and can be read.
-- A function of its own, in PL/pgSQL, because a statement that names a table is planned against it:
-- inside the probe's statement a source that is missing (a view dropped, or not created yet by the
-- app's migration) failed the whole probe, claim included, and the tick stopped every job for a
-- reminder problem. Here it is planned only when called, so a tick that finds the source broken
-- probes again without it (crontick.tick.probe.look) and still runs its jobs.
create or replace function {schema}.crontick_reminder_next_due(
    _now timestamptz,
    _kinds text[],             -- reminder kinds with their windows (now + floor, now + lead]
    _leads interval[],
    _floors interval[]
)
returns timestamptz
language plpgsql
stable
set search_path = pg_catalog, {schema}
set plan_cache_mode = force_generic_plan
-- On a big source without an index on starts_at the planner's estimate passes jit_above_cost (issue 19).
set jit = off
as $$
begin
return (
    select min(u.first_at - w.lead)
    from unnest(_kinds, _leads, _floors) as w(kind, lead, floor)
    cross join lateral (
        -- Bookings in starts_at order from the floor (the partial index), each looked up
        -- in reminder_sends' unique (booking_id, kind), up to the first without its row:
        -- the walk reads the bookings already reminded in the window, and past now + lead
        -- usually one more (none has a row unless the leads changed; the lookup covers
        -- that too). Never the send log as a whole, which grows with every reminder sent.
        -- `offset 0` keeps the lookup a lookup: without it the planner may turn not
        -- exists into an anti-join that hashes all of reminder_sends.
        -- The source's id as text (reminder_sends.booking_id, migration 0016); only read.
        -- A row without an id gets no reminder (reminder_claim_due), so it is never due.
        select b.starts_at as first_at from {reminder_source} b
        where b.status = 'confirmed' and b.starts_at > _now + w.floor and b.id is not null
          and not exists (select 1 from {schema}.reminder_sends r
                          where r.booking_id = b.id::text and r.kind = w.kind offset 0)
        order by b.starts_at
        limit 1
    ) u
);
end
$$;
