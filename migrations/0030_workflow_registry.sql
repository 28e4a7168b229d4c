-- Why: a run could only be started by a process that defines its workflow, so a producer, the
-- HTTP server or the cron ticker could not start a workflow its workers define. Each process
-- that defines workflows now records them here when its engine starts (upsert by name: the
-- queue and attempt budget its definition gives, first and last seen); a start by name reads
-- this table. Rows are never deleted by Baton: a workflow whose workers are gone can still be
-- started and its run waits on its queue, as a job with no live handler does.
CREATE TABLE workflow_definitions (
  name          text        PRIMARY KEY,
  queue         text        NOT NULL,
  max_attempts  integer     NOT NULL CHECK (max_attempts >= 1),
  first_seen_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now()
);

-- A schedule's target: a job (workflow NULL), or a run of this workflow (its input in payload).
-- The check keeps the two columns in step whoever writes them: a process of an earlier version
-- editing the job type of a workflow schedule is refused instead of leaving a schedule whose
-- runs belong to one workflow and whose job type names another.
ALTER TABLE schedules ADD COLUMN workflow text,
  ADD CONSTRAINT schedules_workflow_job_type CHECK (workflow IS NULL OR job_type = 'workflow:' || workflow);
