-- Why: a job changes state twice (claim, outcome) and neither update can be HOT (state
-- is in index predicates), so every index that covers the new row version is written
-- on every transition. Keep only the indexes the hot path or a rare-row lookup needs:
--   claim -> pkey + live-lease expiry; outcome -> pkey (+ the dead-letter index on
--   dead-lettering). Measured with the pgbench claim/complete round (bench/pgbench).

-- Fast reclaim and heartbeats find live leases through the expiry index (live rows are
-- bounded by the workers' concurrency) and the primary key.
DROP INDEX jobs_live_lease_owner_idx;

-- Admin listings by state: the rare states get a partial index; pending, succeeded and
-- live rows are the bulk of recent ids and are found by walking the primary key backwards.
DROP INDEX jobs_state_id_idx;
CREATE INDEX jobs_settled_rare_idx ON jobs (state, id DESC) WHERE state IN ('dead_lettered', 'cancelled');

-- Listings by tenant walk the primary key backwards with a filter.
DROP INDEX jobs_tenant_id_idx;
