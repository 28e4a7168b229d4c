-- Why: an operator pauses a queue for the whole fleet. A row here means the queue is paused,
-- and the claim statement itself skips a paused queue (one primary-key probe per claim), so
-- every worker process on the database stops claiming it from the first claim after the pause
-- commits, with nothing to propagate and nothing to get out of sync. Jobs already claimed run
-- to their end; enqueues are still accepted. Deleting the row resumes the queue.
CREATE TABLE paused_queues (
  queue      text        PRIMARY KEY,
  paused_at  timestamptz NOT NULL DEFAULT now()
);
