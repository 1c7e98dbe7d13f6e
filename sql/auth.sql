-- Named queries of crontick.auth. Parameters are named; nothing is built with string formatting.

-- name: token_use_record
-- crontick.auth, short-lived tokens: mark a jti as used. recorded = false means it was used
-- before (a replay) or, when live = false, that the token expired more than keep_after ago by
-- the DATABASE's clock. The same statement deletes up to 100 rows past that point, so the table
-- holds only tokens near their lifetime, with no separate cleaner and a bounded cost per tick.
-- Both comparisons use the database's clock, never an app host's: a token accepted by one host
-- keeps its row until the database's time passes exp + keep_after, and from then on no host can
-- record it again, so a replay is refused however far apart the hosts' clocks are (a host more
-- than keep_after behind the database has its tokens refused: it fails closed). SKIP LOCKED keeps
-- concurrent ticks from waiting on each other's pruning.
with pruned as (
    delete from {schema}.crontick_token_uses
    where jti in (
        select jti from {schema}.crontick_token_uses
        where expires_at < now() - %(keep_after)s::interval
        order by expires_at
        limit 100
        for update skip locked
    )
), used as (
    insert into {schema}.crontick_token_uses (jti, expires_at)
    select %(jti)s, %(expires_at)s
    where %(expires_at)s::timestamptz >= now() - %(keep_after)s::interval
    on conflict (jti) do nothing
    returning jti
)
select exists (select 1 from used) as recorded,
    %(expires_at)s::timestamptz >= now() - %(keep_after)s::interval as live;
