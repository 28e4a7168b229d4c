-- Why: a job may wait for other jobs (its parents) to succeed before it runs. Such a job is
-- inserted in state 'waiting' with waiting_for = the parents not yet succeeded, and one edge
-- per such parent in job_dependencies. The edges are released by a trigger, in the very
-- statement that finishes the parent (complete, fail, reap, release, cancel; all fenced by the
-- lease token), so a crash can never leave a dependent stranded between the two writes:
--   succeeded                -> the child's waiting_for goes down; at 0 it becomes pending;
--   dead_lettered, cancelled -> the child is cancelled, its last error naming the parent (and,
--                               through the same trigger, its own dependents), or with
--                               on_parent_failure = 'run' it counts the parent as done.
-- A job without dependents never fires the trigger: its WHEN reads has_dependents, a column of
-- the row being written, which the enqueue of a dependent sets under the parent's row lock.
-- Edges live only while the parent is unfinished, so a finished parent has none, and retention
-- may remove it like any finished job.

ALTER TABLE jobs DROP CONSTRAINT jobs_state_valid;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_valid CHECK (state IN
  ('pending', 'waiting', 'leased', 'running', 'succeeded', 'dead_lettered', 'cancelled')) NOT VALID;
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_state_valid;

-- Nullable without defaults or constant defaults: adding them rewrites nothing.
-- depends_on: the parents named at enqueue (for reading); waiting_for: parents still unfinished.
ALTER TABLE jobs ADD COLUMN depends_on bigint[];
ALTER TABLE jobs ADD COLUMN waiting_for integer;
ALTER TABLE jobs ADD COLUMN has_dependents boolean NOT NULL DEFAULT false;

-- Waiting jobs are a fourth part of the table (next to pending, live leases and finished),
-- counted and listed through their own partial index.
CREATE INDEX IF NOT EXISTS jobs_waiting_idx ON jobs (queue, id) WHERE state = 'waiting';

CREATE TABLE job_dependencies (
  parent_id         bigint NOT NULL,
  child_id          bigint NOT NULL,
  on_parent_failure text   NOT NULL CHECK (on_parent_failure IN ('cancel', 'run')),
  -- The child's queue's NOTIFY channel, computed by the enqueuer (the daemon's naming).
  channel           text   NOT NULL,
  PRIMARY KEY (parent_id, child_id)
);

-- Plain jobs a workflow run awaits (ctx.all with { job }): when one finishes, the run's driving
-- job, if the run waits, is made due in the same statement (the job is marked has_dependents).
CREATE TABLE workflow_child_jobs (
  run_id  bigint NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
  job_id  bigint NOT NULL,
  -- The NOTIFY channel of the run's queue.
  channel text   NOT NULL,
  PRIMARY KEY (job_id, run_id)
);
CREATE INDEX workflow_child_jobs_run_idx ON workflow_child_jobs (run_id);

-- Releases the dependents of `parent`, which has just finished with `outcome`. Each child row is
-- locked by its UPDATE, and a concurrent release of another parent of the same child re-reads
-- waiting_for after the lock, so two parents finishing at once never both leave it at 1.
-- A cancelled child is counted in finished_counts like every other finish, and its own
-- UPDATE fires the trigger below for its dependents (cancellation reaches every level).
CREATE FUNCTION release_dependents(parent bigint, outcome text) RETURNS integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  reason jsonb := jsonb_build_object('attempt', 0, 'token', '0', 'kind', 'parent_failed', 'name', 'ParentFailed',
    'message', format('parent job %s was %s', parent, replace(outcome, '_', '-')), 'at', now());
  n integer;
BEGIN
  WITH e AS (
    DELETE FROM job_dependencies WHERE parent_id = parent RETURNING child_id, on_parent_failure, channel
  ), c AS (
    UPDATE jobs j SET
      waiting_for = j.waiting_for - 1,
      state = CASE WHEN outcome <> 'succeeded' AND e.on_parent_failure = 'cancel' THEN 'cancelled'
                   WHEN j.waiting_for <= 1 THEN 'pending' ELSE 'waiting' END,
      finished_at = CASE WHEN outcome <> 'succeeded' AND e.on_parent_failure = 'cancel' THEN now() END,
      last_error = CASE WHEN outcome <> 'succeeded' AND e.on_parent_failure = 'cancel' THEN reason ELSE j.last_error END,
      errors = CASE WHEN outcome <> 'succeeded' AND e.on_parent_failure = 'cancel' THEN j.errors || jsonb_build_array(reason)
                    ELSE j.errors END,
      updated_at = now()
    FROM e WHERE j.id = e.child_id AND j.state = 'waiting'
    RETURNING j.queue, j.state, e.channel
  ), counted AS (
    INSERT INTO finished_counts AS s (queue, state, shard, n)
      SELECT queue, state, pg_backend_pid() % 32, count(*) FROM c WHERE state = 'cancelled' GROUP BY queue, state ORDER BY queue, state
      ON CONFLICT (queue, state, shard) DO UPDATE SET n = s.n + excluded.n
  ), runs AS (
    -- A workflow run awaiting this job: due now if it waits (its driving job is pending).
    UPDATE jobs pj SET run_at = now(), updated_at = now()
    FROM workflow_child_jobs w JOIN workflow_runs r ON r.id = w.run_id
    WHERE w.job_id = parent AND r.state = 'waiting' AND pj.id = r.job_id AND pj.state = 'pending' AND pj.run_at > now()
    RETURNING w.channel
  ), woken AS (
    SELECT pg_notify(ch, '') FROM (SELECT channel AS ch FROM c WHERE state = 'pending' UNION SELECT channel FROM runs) x
  )
  SELECT (SELECT count(*) FROM c) + 0 * (SELECT count(*) FROM woken) INTO n;
  RETURN n;
END $$;

CREATE FUNCTION jobs_release_dependents() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    -- deleteOnSuccess deletes a live lease at completion: that is a success.
    PERFORM release_dependents(OLD.id, CASE WHEN OLD.state IN ('leased', 'running') THEN 'succeeded' ELSE 'cancelled' END);
  ELSE
    PERFORM release_dependents(NEW.id, NEW.state);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER jobs_release_dependents AFTER UPDATE OF state ON jobs FOR EACH ROW
  WHEN (NEW.has_dependents AND NEW.state IN ('succeeded', 'dead_lettered', 'cancelled')
    AND OLD.state NOT IN ('succeeded', 'dead_lettered', 'cancelled'))
  EXECUTE FUNCTION jobs_release_dependents();
CREATE TRIGGER jobs_release_dependents_on_delete AFTER DELETE ON jobs FOR EACH ROW
  WHEN (OLD.has_dependents AND OLD.state NOT IN ('succeeded', 'dead_lettered', 'cancelled'))
  EXECUTE FUNCTION jobs_release_dependents();

-- Retention of workflow runs: a finished run (succeeded, cancelled, or dead-lettered: its driving
-- job's state) leaves with its driving job, when retention deletes that job (or, with
-- deleteOnSuccess, when the job is deleted at its success), together with its steps, events and
-- child-job links (ON DELETE CASCADE) and its finished descendants. A child run whose parent
-- still runs is kept (the parent reads its outcome when it resumes); it leaves with the parent.
CREATE FUNCTION jobs_remove_workflow_run() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  WITH RECURSIVE top AS (
    SELECT r.id FROM workflow_runs r
    WHERE r.job_id = OLD.id
      AND (r.state IN ('succeeded', 'cancelled') OR OLD.state = 'dead_lettered')
      AND NOT EXISTS (SELECT 1 FROM workflow_runs p LEFT JOIN jobs pj ON pj.id = p.job_id
        WHERE p.id = r.parent_run_id AND p.state IN ('running', 'sleeping', 'waiting')
          AND pj.state IS DISTINCT FROM 'dead_lettered')
  ), tree(id) AS (
    SELECT id FROM top
    UNION
    SELECT c.id FROM workflow_runs c JOIN tree t ON c.parent_run_id = t.id
    LEFT JOIN jobs cj ON cj.id = c.job_id
    WHERE c.state IN ('succeeded', 'cancelled') OR cj.id IS NULL OR cj.state = 'dead_lettered'
  )
  DELETE FROM workflow_runs WHERE id IN (SELECT id FROM tree);
  RETURN NULL;
END $$;

CREATE TRIGGER jobs_remove_workflow_run AFTER DELETE ON jobs FOR EACH ROW
  WHEN (OLD.job_type LIKE 'workflow:%')
  EXECUTE FUNCTION jobs_remove_workflow_run();
