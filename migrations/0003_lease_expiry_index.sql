-- Why: every lease write (start, heartbeat, complete, fail, release) names its rows by
-- primary key and fences them with state IN ('leased', 'running'). While the expiry
-- index was partial on that same predicate, the planner could answer the fence by
-- reading every live lease, and with statistics taken when few leases were live it did,
-- once per row of the batch: 144 ms for a 200-row complete next to 5,000 live leases.
-- Keyed on lease_expires_at IS NOT NULL it holds the same rows (jobs_lease_consistent:
-- a row has an expiry exactly when its lease is live), but only statements that ask
-- for an expiry can use it: the reaper and worker pruning.
CREATE INDEX jobs_lease_expiry_idx ON jobs (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
DROP INDEX jobs_live_lease_expiry_idx;
