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
ALTER TABLE schedules ADD COLUMN workflow text;
