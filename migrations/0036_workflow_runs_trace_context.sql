-- Why: a run keeps the W3C trace context it was started in ({"traceparent", "tracestate"}, as
-- jobs.trace_context, migration 0008), so a replay whose driving job retention deleted gives the
-- new job the producer's trace. Written once, with the run; read only by a replay that inserts a
-- driving job. Only workflow starts write it (plain jobs never touch workflow_runs). Nullable,
-- no default, no index: adding it rewrites nothing, and a run started untraced stores nothing.
ALTER TABLE workflow_runs ADD COLUMN trace_context jsonb;
