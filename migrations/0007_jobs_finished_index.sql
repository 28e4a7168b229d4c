-- Why: finished jobs (succeeded, dead-lettered, cancelled) are deleted once older than the
-- retention of their state. This index finds them by state and finish time, so a retention
-- sweep reads what it deletes and nothing else, however many jobs are live or retained. It
-- costs one index entry per finished job (none with deleteOnSuccess, whose jobs leave at
-- completion). A plain CREATE INDEX: it blocks writes to jobs while it builds, which on a
-- large table is a deploy-time pause (create it CONCURRENTLY by hand beforehand to avoid it;
-- IF NOT EXISTS then skips it here).
CREATE INDEX IF NOT EXISTS jobs_finished_idx ON jobs (state, finished_at) WHERE finished_at IS NOT NULL;
