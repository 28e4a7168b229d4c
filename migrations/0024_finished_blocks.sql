-- Why: the index of finished jobs by queue (jobs_finished_queue_id_idx, 0017) took an entry
-- for every finished job, at every completion: about a fifth of a completion's server time in
-- a drain (docs/benchmarks.md, What each part costs), paid by every job for listings by queue
-- and retention's walk. This map records which blocks of 256 ids (id >> 8) hold finished jobs
-- of a queue instead: a completion adds a row only when its batch finishes the first job of a
-- queue in a block, one probe otherwise. A listing by queue reads the queue's blocks newest
-- first, and each block's ids through the primary key; retention walks the primary key.
--
-- Written by every Baton statement that finishes a job, with the finished-job counters
-- (queries/job.ts, recordFinishedSql), by release_dependents below, and by triggers for rows
-- inserted finished (an import, COPY) or moved to another queue. Like the counters, it misses
-- jobs that hand-written SQL moves into a finished state (a trigger on that update would run
-- at every completion): they are still in the table, in every listing but those by queue, and
-- retention deletes them. No unique key: two completers finishing
-- the first jobs of one block at once may both add a row (readers skip repeats), where a key
-- would make the second wait for the first's commit. Retention deletes the rows of blocks that
-- hold no job of their queue any more (queries/job.ts, purgeScan).

-- Completions wait from here to the commit, so the read below sees every finished job that a
-- completion of this version (which writes the map) does not. The index this map replaces is
-- dropped by 0025, in a transaction of its own: dropping it here would raise this lock to an
-- exclusive one while other sessions wait, which can deadlock with one that holds a lesser lock
-- on jobs and waits for a stronger one.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE finished_blocks (
  queue text   NOT NULL,
  block bigint NOT NULL
);
-- Listings: a queue's blocks newest first. Retention: the blocks of a range of ids.
CREATE INDEX finished_blocks_queue_idx ON finished_blocks (queue, block);
CREATE INDEX finished_blocks_block_idx ON finished_blocks (block);

CREATE FUNCTION jobs_record_finished_block() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM finished_blocks WHERE queue = NEW.queue AND block = NEW.id >> 8) THEN
    INSERT INTO finished_blocks (queue, block) VALUES (NEW.queue, NEW.id >> 8);
  END IF;
  RETURN NULL;
END $$;

-- The WHEN is evaluated per row; an enqueued job (not finished) queues no trigger event, and
-- Baton's updates never set the queue, so they never reach the second trigger.
CREATE TRIGGER jobs_record_finished_block AFTER INSERT ON jobs FOR EACH ROW
  WHEN (NEW.finished_at IS NOT NULL)
  EXECUTE FUNCTION jobs_record_finished_block();
CREATE TRIGGER jobs_record_finished_block_on_update AFTER UPDATE OF queue ON jobs FOR EACH ROW
  WHEN (NEW.finished_at IS NOT NULL)
  EXECUTE FUNCTION jobs_record_finished_block();

INSERT INTO finished_blocks (queue, block)
  SELECT DISTINCT queue, id >> 8 FROM jobs WHERE finished_at IS NOT NULL;

-- release_dependents (0016) with the cancelled dependents' blocks recorded beside their count.
CREATE OR REPLACE FUNCTION release_dependents(parent bigint, outcome text) RETURNS integer
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
    RETURNING j.id, j.queue, j.state, e.channel
  ), counted AS (
    INSERT INTO finished_counts AS s (queue, state, shard, n)
      SELECT queue, state, pg_backend_pid() % 32, count(*) FROM c WHERE state = 'cancelled' GROUP BY queue, state ORDER BY queue, state
      ON CONFLICT (queue, state, shard) DO UPDATE SET n = s.n + excluded.n
  ), blocked AS (
    INSERT INTO finished_blocks (queue, block)
      SELECT DISTINCT c.queue, c.id >> 8 FROM c
      WHERE c.state = 'cancelled'
        AND NOT EXISTS (SELECT 1 FROM finished_blocks b WHERE b.queue = c.queue AND b.block = c.id >> 8 OFFSET 0)
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
