-- Why: parallel steps, versioning and crash-counted step attempts (issue 36).
-- * A run whose history its code cannot replay (non-determinism) stops as 'blocked' with
--   blocked_reason ({ code, message, steps }) instead of dead-lettering its driving job; an
--   operator resumes it (replay, after deploying code that replays it) or cancels it.
-- * ctx.patched() records a 'patch' marker in the run's history.
-- * loaded_token / crashes: the driving job's lease token at the run's last load, and how many
--   executions in a row that loaded the run ended in a crash (lease expired, worker gone)
--   without committing a step since. Both are written by statements that already write the run row (the load, a
--   step commit), so a step's start costs no write (see workflow-execution.ts).

ALTER TABLE workflow_runs DROP CONSTRAINT workflow_runs_state_valid;
ALTER TABLE workflow_runs ADD CONSTRAINT workflow_runs_state_valid
  CHECK (state IN ('running', 'sleeping', 'waiting', 'blocked', 'succeeded', 'cancelled'));
ALTER TABLE workflow_runs ADD COLUMN blocked_reason jsonb;
ALTER TABLE workflow_runs ADD COLUMN loaded_token bigint;
ALTER TABLE workflow_runs ADD COLUMN crashes integer NOT NULL DEFAULT 0;

ALTER TABLE workflow_steps DROP CONSTRAINT workflow_steps_kind_valid;
ALTER TABLE workflow_steps ADD CONSTRAINT workflow_steps_kind_valid CHECK (kind IN ('step', 'sleep', 'event', 'children', 'patch'));
