-- 0031: the enqueuer's trace context kept with its job (issue 37), so that the job's span links to
-- the request that enqueued it. Set by crontick.enqueue only while the caller is inside an
-- OpenTelemetry span (sql/tracing.sql job_keep_traceparent), returned with each claimed job (the
-- claim's last element) and read only while the app traces: null for every app that does not trace. A W3C
-- traceparent is 55 characters; the bound keeps whatever a plain INSERT writes there small.
alter table {schema}.jobs add column traceparent text,
    add constraint jobs_traceparent_short check (octet_length(traceparent) <= 256);
