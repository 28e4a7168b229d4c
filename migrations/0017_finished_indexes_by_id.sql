-- Why: the listings of finished jobs by tenant and by queue (0009) were keyed on (x, -id), so
-- every finished job's entry went to the left end of its tenant's or queue's range: no fast
-- path to the rightmost page, and pages split in half as entries arrive in descending key
-- order, so the indexes grew to about twice the size of an ascending key's. Keyed on (x, id)
-- a finish appends at the right end of the range, and a listing, newest first, reads the
-- same index backwards. The listing statements ask for exactly this index (see job-read.ts).
-- Plain DROP/CREATE INDEX: writes to jobs wait while they build (on a large table create the
-- new ones CONCURRENTLY by hand beforehand; IF NOT EXISTS then skips them here).
DROP INDEX IF EXISTS jobs_finished_tenant_idx;
DROP INDEX IF EXISTS jobs_finished_queue_idx;
CREATE INDEX IF NOT EXISTS jobs_finished_tenant_id_idx ON jobs (tenant_id, id) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_finished_queue_id_idx ON jobs (queue, id) WHERE finished_at IS NOT NULL;
