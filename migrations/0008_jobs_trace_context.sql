-- Why: a job carries the W3C trace context of whoever enqueued it ({"traceparent", "tracestate"}),
-- so the span its handler runs in continues the producer's trace, on every attempt and in
-- whichever process claims it. Nullable, no default: adding it rewrites nothing.
ALTER TABLE jobs ADD COLUMN trace_context jsonb;
