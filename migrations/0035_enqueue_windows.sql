-- Why: debounce and throttle by key (docs/debounce.md). An enqueue carrying `debounce` or
-- `throttle` decides, under a lock of its (tenant, queue, key), whether to create a job, fold
-- itself into the key's pending job, or drop. Plain jobs must pay nothing for it, so the state
-- lives in a side table that only such enqueues read and write, and not in an index on jobs:
-- a partial unique index on jobs (queue, key) WHERE state = 'pending' would be one more index
-- every insert, claim and completion of every job checks for its predicate, and would still need
-- a column on jobs. Not even a nullable column on jobs for the rule: a wider row tips the cached
-- generic plan of the claim on a fresh table to a sequential scan (test/db/plans-fresh.test.ts),
-- so the rule lives here too and a job's read joins it. No foreign key to jobs either: it would
-- add RI triggers to every delete of jobs (retention); a row whose job is gone counts as absent.

-- One row per key: the job its last enqueue created, and the window that job opened.
--   kind:      'trailing' | 'leading' (debounce) or 'throttle'; a row of another kind is stale.
--   job_id:    trailing: the pending job enqueues fold into while it is unclaimed; leading and
--              throttle: the job dropped enqueues answer with.
--   opened_at: first enqueue of the burst (maxWaitMs counts from it) or the throttle window's start.
--   until_at:  leading: drops until then (each drop pushes it); throttle: the window's end;
--              trailing: the job's run_at as last set.
--   started:   throttle: jobs created in the window.
--   rule:      the rule of the last enqueue ({kind, key, windowMs, ...}), shown with job_id's job.
-- Retention's sweep deletes a row once its window has closed (until_at passed) and its job is no
-- longer pending and unclaimed (src/core/retention-windows.ts), walking job_windows_until_idx.
-- Rows are written only under the row's own lock (INSERT ... ON CONFLICT DO UPDATE), which
-- serialises every enqueue of one key across connections.
CREATE TABLE job_windows (
  tenant_id text        NOT NULL,
  queue     text        NOT NULL,
  key       text        NOT NULL,
  kind      text        NOT NULL CHECK (kind IN ('trailing', 'leading', 'throttle')),
  job_id    bigint,
  opened_at timestamptz,
  until_at  timestamptz,
  started   integer     NOT NULL DEFAULT 0,
  rule      jsonb,
  PRIMARY KEY (tenant_id, queue, key)
);
-- A job's read (GET /api/jobs/:id, the console) finds the rule its key holds it under.
CREATE INDEX job_windows_job_id_idx ON job_windows (job_id);
-- Retention's sweep walks the rows whose until_at has passed, oldest first, from where it stopped.
CREATE INDEX job_windows_until_idx ON job_windows (until_at, tenant_id, queue, key);
