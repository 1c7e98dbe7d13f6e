-- 0014: inbound events deduplicated on the body their sender signed, and the admin audit by age.

-- GitHub signs the body alone, with no timestamp, and X-GitHub-Delivery is not signed: a
-- captured delivery replayed under a new delivery id must find its first row all the same.
-- body_sha256 is the SHA-256 of the raw body for hooks whose signature covers no id (github),
-- null for the others (their event id is signed). Unique per hook, so the record statement's ON
-- CONFLICT DO NOTHING (no target: every unique index is an arbiter) finds the replay.
alter table {schema}.crontick_inbound_events add column body_sha256 bytea;
alter table {schema}.crontick_inbound_events add constraint crontick_inbound_events_body_sha256_length
    check (octet_length(body_sha256) = 32);
create unique index crontick_inbound_events_body on {schema}.crontick_inbound_events (hook, body_sha256)
    where body_sha256 is not null;

-- Retention deletes audit rows past their keep period (crontick.tick.retention), oldest first.
create index admin_audit_at on {schema}.admin_audit (at);
