-- Why: every /metrics scrape counted the workflow runs per name and state over the whole table,
-- so a scrape grew with the history of finished runs. Finished runs (stored succeeded or
-- cancelled) are now counted as they finish; live runs (running, sleeping, waiting) are still
-- counted where they are, through the state index of 0027, since a live run's reader state
-- follows its driving job's (dead-lettered or cancelled through the jobs API).
--
-- Not kept like outbox_counts (0028): runs are deleted by a row trigger on jobs (0016), one
-- statement per job, in job order, so counter rows upserted by those statements could be locked
-- in opposite orders by two transactions (a deadlock). Here every write to the runs only appends
-- a row to workflow_run_count_deltas, which locks nothing another writer waits for; the elected
-- leader folds the deltas into workflow_run_counts every few seconds (one statement, in key
-- order), and a reader sums both. Row triggers whose WHEN skips every write that moves no run
-- into or out of a finished state (a step's progress, a wake-up), so those cost nothing more.

-- Writers wait from here to the commit, so the counts read at the end see every row the
-- triggers do not (LOCK takes no snapshot, whatever the session's isolation level).
LOCK TABLE workflow_runs IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE workflow_run_counts (
  name  text   NOT NULL,
  state text   NOT NULL CHECK (state IN ('succeeded', 'cancelled')),
  n     bigint NOT NULL,
  PRIMARY KEY (name, state)
);

-- Appended to by the triggers, emptied by the fold: no index, so an append touches one heap page.
CREATE TABLE workflow_run_count_deltas (
  name  text     NOT NULL,
  state text     NOT NULL,
  n     smallint NOT NULL
);

CREATE FUNCTION workflow_run_count() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- Not a DELETE: under REPEATABLE READ that would keep counts committed after the snapshot.
    -- The deltas first, as the fold locks them.
    TRUNCATE workflow_run_count_deltas, workflow_run_counts;
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    IF OLD.state IN ('succeeded', 'cancelled') THEN
      INSERT INTO workflow_run_count_deltas (name, state, n) VALUES (OLD.name, OLD.state, -1);
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    IF NEW.state IN ('succeeded', 'cancelled') THEN
      INSERT INTO workflow_run_count_deltas (name, state, n) VALUES (NEW.name, NEW.state, 1);
    END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER workflow_run_count_insert AFTER INSERT ON workflow_runs FOR EACH ROW
  WHEN (NEW.state IN ('succeeded', 'cancelled'))
  EXECUTE FUNCTION workflow_run_count();
CREATE TRIGGER workflow_run_count_update AFTER UPDATE ON workflow_runs FOR EACH ROW
  WHEN ((OLD.state IN ('succeeded', 'cancelled') OR NEW.state IN ('succeeded', 'cancelled'))
    AND (OLD.state, OLD.name) IS DISTINCT FROM (NEW.state, NEW.name))
  EXECUTE FUNCTION workflow_run_count();
CREATE TRIGGER workflow_run_count_delete AFTER DELETE ON workflow_runs FOR EACH ROW
  WHEN (OLD.state IN ('succeeded', 'cancelled'))
  EXECUTE FUNCTION workflow_run_count();
CREATE TRIGGER workflow_run_count_truncate AFTER TRUNCATE ON workflow_runs
  FOR EACH STATEMENT EXECUTE FUNCTION workflow_run_count();

INSERT INTO workflow_run_counts (name, state, n)
  SELECT name, state, count(*) FROM workflow_runs WHERE state IN ('succeeded', 'cancelled') GROUP BY name, state;
