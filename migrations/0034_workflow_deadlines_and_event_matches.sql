-- Why: a run may be bounded as a whole (runTimeoutMs): deadline_at is set once at its start from
-- the database clock, and a run past it is timed_out, a finished state of its own (counted like
-- succeeded and cancelled, migration 0029). No sweeper looks for it: the driving job's run_at is
-- never later than the deadline while the run sleeps or waits, so the ordinary claim of that job
-- row ends it; a dead worker's job comes back through the rescuer as any job does; every
-- execution write is fenced by the deadline; and readers see timed_out from the deadline on.
-- A definition's default timeout is kept in the registry, so a start by name from any process
-- applies it.
--
-- An event wait may take several names (first wins) and a match (a JSON value the payload must
-- contain, @>), kept on its step row: waits parked together (parallel steps, migration 0033)
-- each keep their own, and the wake-up conditions look at every waiting event step, so the run
-- row keeps none. wait_events is NULL for steps written by earlier versions: their single
-- wait_event is read instead (COALESCE in the queries), so no row is rewritten here.
ALTER TABLE workflow_runs ADD COLUMN deadline_at timestamptz;
ALTER TABLE workflow_steps
  ADD COLUMN wait_events text[],
  ADD COLUMN wait_match jsonb;
ALTER TABLE workflow_definitions ADD COLUMN run_timeout_ms bigint CHECK (run_timeout_ms > 0);

-- The states are 0033's (blocked included) plus timed_out.
-- NOT VALID, and not validated: every stored row passed the former check, whose states are a
-- subset of these, so the new one holds for them; a VALIDATE here would scan every run while
-- this migration's transaction holds the ALTER's exclusive lock, stopping every workflow
-- write for the length of the scan during a rolling upgrade. Every write from now on is checked.
ALTER TABLE workflow_runs DROP CONSTRAINT workflow_runs_state_valid,
  ADD CONSTRAINT workflow_runs_state_valid
    CHECK (state IN ('running', 'sleeping', 'waiting', 'blocked', 'succeeded', 'cancelled', 'timed_out')) NOT VALID;

ALTER TABLE workflow_run_counts DROP CONSTRAINT workflow_run_counts_state_check,
  ADD CONSTRAINT workflow_run_counts_state_check CHECK (state IN ('succeeded', 'cancelled', 'timed_out'));

CREATE OR REPLACE FUNCTION workflow_run_count() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    TRUNCATE workflow_run_count_deltas, workflow_run_counts;
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    IF OLD.state IN ('succeeded', 'cancelled', 'timed_out') THEN
      INSERT INTO workflow_run_count_deltas (name, state, n) VALUES (OLD.name, OLD.state, -1);
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    IF NEW.state IN ('succeeded', 'cancelled', 'timed_out') THEN
      INSERT INTO workflow_run_count_deltas (name, state, n) VALUES (NEW.name, NEW.state, 1);
    END IF;
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER workflow_run_count_insert ON workflow_runs;
DROP TRIGGER workflow_run_count_update ON workflow_runs;
DROP TRIGGER workflow_run_count_delete ON workflow_runs;
CREATE TRIGGER workflow_run_count_insert AFTER INSERT ON workflow_runs FOR EACH ROW
  WHEN (NEW.state IN ('succeeded', 'cancelled', 'timed_out'))
  EXECUTE FUNCTION workflow_run_count();
CREATE TRIGGER workflow_run_count_update AFTER UPDATE ON workflow_runs FOR EACH ROW
  WHEN ((OLD.state IN ('succeeded', 'cancelled', 'timed_out') OR NEW.state IN ('succeeded', 'cancelled', 'timed_out'))
    AND (OLD.state, OLD.name) IS DISTINCT FROM (NEW.state, NEW.name))
  EXECUTE FUNCTION workflow_run_count();
CREATE TRIGGER workflow_run_count_delete AFTER DELETE ON workflow_runs FOR EACH ROW
  WHEN (OLD.state IN ('succeeded', 'cancelled', 'timed_out'))
  EXECUTE FUNCTION workflow_run_count();
