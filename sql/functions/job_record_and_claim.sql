-- crontick_job_record_and_claim: record one batch's outcomes and the tick's log row
-- (crontick_job_record_outcomes), then claim the next batch (crontick_job_claim_due), in one
-- round trip and one transaction (one commit, not two). Called by sql/queries.sql
-- job_record_and_claim (crontick.tick.record.record_batch with claim_next, for crontick tick
-- --drain: a tick whose next one would claim straight away). The record goes first, so the claim
-- sees what it released. Should the statement fail, neither happened: the outcomes are recorded
-- again by no one, and the claimed batch's jobs are rescued when their lease ends, as after a
-- crash (at least once).
-- The live definition: `crontick migrate` applies this file after the migrations, every time
-- (lib/crontick/db/migrate.py says how a changed signature ships).
create or replace function {schema}.crontick_job_record_and_claim(
    _now timestamptz,
    _done_ids bigint[],
    _done_attempts int[],
    _others json,
    _log boolean,
    _started_at timestamptz,
    _source text,
    _summary jsonb,
    _jobs jsonb,
    _next_other_at timestamptz,
    _limit int,                 -- the next batch: the most jobs to claim, and their lease
    _lease interval,
    _flow jsonb,                -- flow control's claim arguments (crontick.flow.claim_args)
    _done_ms double precision[] default null  -- crontick_job_record_outcomes's (last and defaulted there too)
)
returns table (
    written bigint[], succeeded bigint, retried bigint, failed bigint, released bigint, fenced bigint,
    jobs_due boolean, next_job_at timestamptz, snoozed bigint, alerts_due boolean,
    next_jobs json, leases_expired boolean, next_now timestamptz, throttled_until timestamptz, expired int
)
language plpgsql
as $$
declare
    r record;
begin
    select * into r from {schema}.crontick_job_record_outcomes(
        _now, _done_ids, _done_attempts, _others, _log, _started_at, _source, _summary, _jobs, _next_other_at, _done_ms);
    return query
    select r.written, r.succeeded, r.retried, r.failed, r.released, r.fenced, r.jobs_due, r.next_job_at,
        r.snoozed, r.alerts_due, c.jobs, c.leases_expired, c.now, c.throttled_until, c.expired
    from {schema}.crontick_job_claim_due(null, _limit, _lease, _flow) c;
end
$$;
