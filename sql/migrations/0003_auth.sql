-- 0003: short-lived tick tokens (crontick.auth) are accepted once: each used jti is kept
-- until its token has expired, then pruned by later uses (see token_use_record in sql/auth.sql).

create table {schema}.crontick_token_uses (
    jti        text        primary key,
    -- The token's exp plus the clock leeway: after this the token is refused anyway,
    -- so the row no longer guards anything.
    expires_at timestamptz not null,
    used_at    timestamptz not null default now(),
    constraint crontick_token_uses_jti_length check (length(jti) between 1 and 200)
);

-- Pruning reads the oldest expired rows first.
create index crontick_token_uses_expires on {schema}.crontick_token_uses (expires_at);
