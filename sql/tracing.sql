-- Named queries of crontick's OpenTelemetry traces (crontick.tracing), sent only while the app
-- traces: an app without OpenTelemetry never sends them.

-- name: job_keep_traceparent
-- crontick.jobs.queue.enqueue, right after job_insert in the caller's transaction, only when the
-- caller is inside a valid span: the enqueuer's traceparent (migration 0031), which the job's span
-- links to. A debounced enqueue that merged into a job keeps the first enqueuer's.
update {schema}.jobs set traceparent = %(traceparent)s where id = %(id)s and traceparent is null

-- name: job_traceparents
-- crontick.jobs.runner.run_batch, once per batch and only when the app traces: the traceparents of
-- the batch's jobs, by primary key.
select id, traceparent from {schema}.jobs where id = any(%(ids)s::bigint[]) and traceparent is not null
