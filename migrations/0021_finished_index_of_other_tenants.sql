-- Why: every finished job paid for three indexes of finished rows, each an entry (about 80
-- bytes of WAL and two buffer touches) written by the completing statement; a plain job's
-- completion cost about twice what it did before they came (docs/benchmarks.md, Where the
-- time went since 66ea088). The index by tenant now holds only tenants other than 'default',
-- so the jobs of an application without tenant keys no longer pay for it. A listing of the
-- default tenant's history walks the primary key instead (queries/job-read.ts).
-- Plain CREATE/DROP INDEX: writes to jobs wait while it builds; on a large table create it
-- CONCURRENTLY by hand first (docs/operations.md), and this migration skips it.
CREATE INDEX IF NOT EXISTS jobs_finished_other_tenant_idx ON jobs (tenant_id, id)
  WHERE finished_at IS NOT NULL AND tenant_id <> 'default';
DROP INDEX IF EXISTS jobs_finished_tenant_id_idx;
