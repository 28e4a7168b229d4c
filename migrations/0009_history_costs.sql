-- Why: reads of live work (claims, counts, listings) must cost what the live work costs, not
-- what the history of finished jobs costs.
--
-- 1. A row is in exactly one of three parts, each with its own partial index: pending (the claim
--    index), a live lease (the expiry index, by jobs_lease_consistent) and finished (finished_at
--    set, below). Counts and listings read each part through its index.
ALTER TABLE jobs ADD CONSTRAINT jobs_finished_consistent
  CHECK ((finished_at IS NOT NULL) = (state IN ('succeeded', 'dead_lettered', 'cancelled'))) NOT VALID;
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_finished_consistent;

-- 2. Listings of finished jobs by tenant and by queue, newest first, read one page of index
--    instead of walking the primary key past every other tenant's or queue's history. Each
--    costs one index entry per finished job, written by the outcome (none before: a pending or
--    leased row has no finished_at), and none at all with deleteOnSuccess.
--    Keyed on -id, not id: the primary key cannot give that order, so even a generic plan, which
--    guesses a tenant's share of the table from the average tenant, reads the few rows of a
--    small tenant through this index instead of walking the primary key past everyone else's.
--    Plain CREATE INDEX: writes to jobs wait while they build (create them CONCURRENTLY by hand
--    beforehand on a large table; IF NOT EXISTS then skips them here).
CREATE INDEX IF NOT EXISTS jobs_finished_tenant_idx ON jobs (tenant_id, (-id)) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_finished_queue_idx ON jobs (queue, (-id)) WHERE finished_at IS NOT NULL;

-- 3. Finished jobs are the history, and counting them through an index costs what is kept:
--    their count per queue and state is kept here, by the statements that finish, replay and
--    purge them. Each session writes the rows of its own shard (its backend pid modulo 32),
--    so completes on different connections do not queue behind one counter row; a reader sums
--    the shards. Updates change no indexed column, so they are HOT and the table stays small.
CREATE TABLE finished_counts (
  queue text    NOT NULL,
  state text    NOT NULL CHECK (state IN ('succeeded', 'dead_lettered', 'cancelled')),
  shard integer NOT NULL,
  n     bigint  NOT NULL,
  PRIMARY KEY (queue, state, shard)
);
INSERT INTO finished_counts (queue, state, shard, n)
  SELECT queue, state, 0, count(*) FROM jobs WHERE finished_at IS NOT NULL GROUP BY queue, state;

-- 4. Vacuum for a queue table. Every job leaves dead row versions and dead entries in the claim
--    index; claims and idle polls walk the dead entries at the front of that index until VACUUM
--    removes them. By default autovacuum waits for 20% of the table to be dead, which on a table
--    holding a day of history is millions of jobs: trigger it on a count of changes instead.
--    vacuum_index_cleanup = on: by default a vacuum that finds dead rows on under 2% of the
--    table's pages skips the indexes, which on a large table is exactly the claim index's case.
--    Analyze often, so plans follow the mix of states. (Autovacuum visits a database once per
--    autovacuum_naptime, 1 min by default, a server-wide setting; none of this runs while
--    autovacuum is off.)
ALTER TABLE jobs SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 10000,
  autovacuum_vacuum_insert_scale_factor = 0.01,
  autovacuum_vacuum_insert_threshold = 10000,
  autovacuum_analyze_scale_factor = 0.02,
  autovacuum_analyze_threshold = 10000,
  vacuum_index_cleanup = on
);
