-- 0018: the enqueue side of flow control (CONTRACT.md "Flow control"): the SQL API crontick.enqueue
-- takes group_key, priority and a debounce (sql/functions/enqueue.sql), and debounced enqueues merge
-- race-free into the job that has not started.

-- crontick.enqueue gains arguments: `create or replace` cannot change a signature, so the old one
-- goes (lib/crontick/db/migrate.py) and the function file creates the new one after this migration.
drop function if exists {schema}.{api_enqueue}(text, jsonb, timestamptz, integer, text);

alter table {schema}.jobs add constraint jobs_debounce_key_not_empty check (debounce_key <> '');

-- Debounce: at most one job per (type, debounce key) that has not started, i.e. is pending and was
-- never claimed (started_at is set by the first claim and never cleared). An enqueue with that key
-- merges into it with ON CONFLICT on this index, so concurrent enqueues make one job. Once a tick
-- has claimed the job (even one it then handed back unstarted at its budget, or a snooze), the row
-- leaves the index for good: no later update can collide with a newer job holding the key.
create unique index jobs_debounce_open on {schema}.jobs (type, debounce_key)
    where debounce_key is not null and status = 'pending' and started_at is null;
