-- Why: the run listing filtered by state (GET /api/workflows/runs?state=, workflows.listRuns)
-- walks the runs of that stored state newest first, instead of every run: a state that few
-- runs have costs what those runs cost, however long the history. A run's state changes a few
-- times in its life, so the index adds little to its writes.
-- Plain CREATE INDEX: writes to workflow_runs wait while it builds (on a large table create it
-- CONCURRENTLY by hand first; IF NOT EXISTS then skips it here).
CREATE INDEX IF NOT EXISTS workflow_runs_state_idx ON workflow_runs (state, id);
