-- 0013: each failed or retried attempt keeps its traceback (bounded, secrets scrubbed) beside its
-- one-line error, for the admin's job page and GET /api/admin/jobs/{id} (history[].traceback).
-- Older code writes no traceback and reads none: the column is nullable and nothing else changes.
alter table {schema}.job_attempts add column traceback text;
