-- Named queries of crontick's OpenTelemetry traces (crontick.tracing), sent only while the app
-- traces: an app without OpenTelemetry never sends them.

-- name: job_keep_traceparent
-- POST /api/hooks/{name} for a hook with flow control (crontick.hooks.endpoint), only while the app traces and
-- the request came with a trace context: inbound_event_flow_record enqueues through crontick.enqueue without
-- one, so the new (or merged) job keeps it here, in the same transaction; checked as crontick.tracing.well_formed
-- before it is sent. A job that merged keeps its first enqueuer's, as sql/functions/job_insert_many.sql does.
-- (Every other enqueue passes it to crontick_job_insert_many, which keeps a valid one.)
update {schema}.jobs set traceparent = %(traceparent)s where id = %(id)s and traceparent is null
