-- 0007: inbound webhooks (crontick.inbound) and snoozing jobs (crontick.Snooze).

-- One row per provider event ever accepted: the primary key is the dedupe. A redelivery of
-- the same (hook, event_id), however late, finds this row and enqueues nothing. There is no
-- foreign key to jobs on purpose: retention deletes finished jobs after days, and the event
-- must outlive its job for as long as the sender may redeliver (Stripe: 3 days).
create table {schema}.crontick_inbound_events (
    hook        text        not null,
    event_id    text        not null,
    job_id      bigint      not null,
    received_at timestamptz not null default now(),
    primary key (hook, event_id),
    constraint crontick_inbound_events_event_id_length check (length(event_id) between 1 and 500)
);

-- Retention deletes the oldest events first.
create index crontick_inbound_events_received on {schema}.crontick_inbound_events (received_at);

-- How many times a job has snoozed (raise crontick.Snooze): bounded by crontick.runner.MAX_SNOOZES.
alter table {schema}.jobs add column snoozes int not null default 0;
alter table {schema}.jobs add constraint jobs_snoozes_non_negative check (snoozes >= 0);
