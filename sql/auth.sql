-- Named queries of crontick.auth. Parameters are named; nothing is built with string formatting.

-- name: token_use_record
-- crontick.auth, short-lived tokens: mark a jti as used. No row back means it was used before,
-- so the token is a replay. The same statement deletes up to 100 expired rows, so the table
-- holds only tokens still within their lifetime, with no separate cleaner and a bounded cost per
-- tick. A pruned row can never be the jti being inserted: a token is accepted only before its
-- expires_at, and only rows past theirs are pruned. SKIP LOCKED keeps concurrent ticks from
-- waiting on each other's pruning.
with pruned as (
    delete from crontick_token_uses
    where jti in (
        select jti from crontick_token_uses
        where expires_at < %(now)s
        order by expires_at
        limit 100
        for update skip locked
    )
)
insert into crontick_token_uses (jti, expires_at)
values (%(jti)s, %(expires_at)s)
on conflict (jti) do nothing
returning jti;
